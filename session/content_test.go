package session

import (
	"errors"
	"reflect"
	"testing"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
)

func TestContentOf(t *testing.T) {
	mime := "text/x-go"
	text := "package a"
	for _, tt := range []struct {
		name  string
		block acp.ContentBlock
		want  event.Content
		err   string // the whole message, as the editor reads it
	}{
		{"text", acp.ContentBlock{Text: &acp.TextContent{Text: "hi"}}, event.Content{Type: "text", Text: "hi"}, ""},
		{"resource link", acp.ContentBlock{ResourceLink: &acp.ResourceLink{URI: "file:///w/a.go", Name: "a.go", MimeType: &mime}},
			event.Content{Type: "resource_link", URI: "file:///w/a.go", Name: "a.go", MimeType: mime}, ""},
		{"resource", acp.ContentBlock{Resource: &acp.EmbeddedResource{Resource: acp.EmbeddedResourceResource{URI: "file:///w/a.go", Text: &text, MimeType: &mime}}},
			event.Content{Type: "resource", URI: "file:///w/a.go", Text: text, MimeType: mime}, ""},
		{"image", acp.ContentBlock{Image: &acp.ImageContent{MimeType: "image/png", Data: "iVBO"}},
			event.Content{Type: "image", MimeType: "image/png", Data: "iVBO"}, ""},
		{"resource without uri", acp.ContentBlock{Resource: &acp.EmbeddedResource{}}, event.Content{},
			`invalid params: "prompt[1].resource" is required for a resource block, with its uri`},
		{"image without data", acp.ContentBlock{Image: &acp.ImageContent{MimeType: "image/png"}}, event.Content{},
			`invalid params: "prompt[1].data" is required for an image block: the image, base64-encoded (an image by uri alone is not supported)`},
		{"audio", acp.ContentBlock{Audio: &acp.AudioContent{MimeType: "audio/wav", Data: "UklG"}}, event.Content{},
			`invalid params: "prompt[1].type" "audio" is not supported: bridle advertises promptCapabilities audio as false`},
		{"no type", acp.ContentBlock{}, event.Content{},
			`invalid params: "prompt[1].type" is required (text, resource_link, resource, image or audio)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ContentOf([]acp.ContentBlock{{Text: &acp.TextContent{Text: "first"}}, tt.block})
			if tt.err != "" {
				if err == nil || err.Error() != tt.err || !errors.Is(err, ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid saying %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := []event.Content{{Type: "text", Text: "first"}, tt.want}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}
