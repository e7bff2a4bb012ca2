package provider_test

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/bridle-dev/bridle/provider"
)

func TestSSE(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	tests := []struct {
		name string
		in   string
		want []provider.Event
		err  bool
	}{
		{"typed and untyped", "event: a\ndata: 1\n\ndata: 2\n\n", []provider.Event{{Type: "a", Data: []byte("1")}, {Data: []byte("2")}}, false},
		{"CRLF, comments, other fields", ": ping\r\nid: 7\r\nevent: b\r\ndata:x\r\n\r\n", []provider.Event{{Type: "b", Data: []byte("x")}}, false},
		{"data lines joined", "data: one\ndata: two\n\n", []provider.Event{{Data: []byte("one\ntwo")}}, false},
		{"blank lines alone", "\n\n\ndata: z\n\n", []provider.Event{{Data: []byte("z")}}, false},
		{"a line longer than the buffer", "data: " + long + "\n\n", []provider.Event{{Data: []byte(long)}}, false},
		{"an unfinished event is dropped", "data: 1\n\ndata: cut", []provider.Event{{Data: []byte("1")}}, false},
		{"a body that breaks", "data: 1\n\n", []provider.Event{{Data: []byte("1")}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r io.Reader = strings.NewReader(tt.in)
			if tt.err {
				r = io.MultiReader(r, iotest.ErrReader(io.ErrUnexpectedEOF))
			}
			s := provider.NewSSE(r)
			var got []provider.Event
			for s.Next() {
				ev := s.Event()
				got = append(got, provider.Event{Type: ev.Type, Data: append([]byte(nil), ev.Data...)})
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d events, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if got[i].Type != tt.want[i].Type || string(got[i].Data) != string(tt.want[i].Data) {
					t.Errorf("event %d = %q %.40q, want %q %.40q", i, got[i].Type, got[i].Data, tt.want[i].Type, tt.want[i].Data)
				}
			}
			if (s.Err() != nil) != tt.err {
				t.Errorf("Err() = %v, want an error: %v", s.Err(), tt.err)
			}
		})
	}
}
