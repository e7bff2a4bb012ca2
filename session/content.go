package session

import (
	"fmt"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
)

// ContentOf converts a prompt's ACP content blocks to the content Start
// takes. A block bridle cannot take is refused with ErrInvalid, naming it
// by its index (JSON-RPC -32602).
func ContentOf(blocks []acp.ContentBlock) ([]event.Content, error) {
	out := make([]event.Content, 0, len(blocks))
	deref := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	for i, b := range blocks {
		var c event.Content
		switch {
		case b.Text != nil:
			c = event.Content{Type: "text", Text: b.Text.Text}
		case b.ResourceLink != nil:
			l := b.ResourceLink
			c = event.Content{Type: "resource_link", URI: l.URI, Name: l.Name, MimeType: deref(l.MimeType)}
		case b.Resource != nil:
			r := b.Resource.Resource
			if r.URI == "" {
				return nil, invalidBlock(i, "resource", "is required for a resource block, with its uri")
			}
			c = event.Content{Type: "resource", URI: r.URI, Text: deref(r.Text), MimeType: deref(r.MimeType)}
		case b.Image != nil:
			// Checked, stored and replaced by a reference by Start, which
			// knows whether the model reads images.
			if b.Image.Data == "" {
				return nil, invalidBlock(i, "data", "is required for an image block: the image, base64-encoded (an image by uri alone is not supported)")
			}
			c = event.Content{Type: "image", MimeType: b.Image.MimeType, Data: b.Image.Data}
		case b.Audio != nil:
			return nil, invalidBlock(i, "type", `"audio" is not supported: bridle advertises promptCapabilities audio as false`)
		default:
			return nil, invalidBlock(i, "type", "is required (text, resource_link, resource, image or audio)")
		}
		out = append(out, c)
	}
	return out, nil
}

// invalidBlock refuses the field of the prompt's block i, as rpc words a
// bad param: `invalid params: "prompt[i].field" what`.
func invalidBlock(i int, field, what string) error {
	return fmt.Errorf("%w: %q %s", ErrInvalid, fmt.Sprintf("prompt[%d].%s", i, field), what)
}
