package rpc

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
)

// In hold mode a request reaches jsonrpc2 as its bare envelope and its
// params wait, unparsed again, for the handler; a response goes whole.
func TestStreamHoldsParamsForTheHandler(t *testing.T) {
	input := `{"jsonrpc":"2.0","id":"a\"b","method":"session/prompt","params":{"sessionId":"s","prompt":[]}}
{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}
{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"cancelled"}}}
`
	s := NewStream(strings.NewReader(input), &strings.Builder{}, nil)
	s.hold = true
	tests := []struct {
		seen   string // what jsonrpc2 is given
		method string
		notif  bool
		params string // held; "" = none
	}{
		{`{"jsonrpc":"2.0","method":"session/prompt","id":"a\"b"}`, "session/prompt", false, `{"sessionId":"s","prompt":[]}`},
		{`{"jsonrpc":"2.0","method":"session/cancel"}`, "session/cancel", true, `{"sessionId":"s"}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"cancelled"}}}`, "", false, ""},
	}
	for _, tt := range tests {
		var v json.RawMessage
		if err := s.ReadObject(&v); err != nil {
			t.Fatal(err)
		}
		if string(v) != tt.seen {
			t.Errorf("jsonrpc2 was given %s, want %s", v, tt.seen)
		}
		if tt.method == "" {
			if s.held != nil {
				t.Errorf("a response left params held")
			}
			continue
		}
		params, ok := s.params(&jsonrpc2.Request{Method: tt.method, Notif: tt.notif})
		if !ok || string(params) != tt.params {
			t.Errorf("%s: held %s, %v; want %s", tt.method, params, ok, tt.params)
		}
		if _, ok := s.params(&jsonrpc2.Request{Method: tt.method, Notif: tt.notif}); ok {
			t.Errorf("%s: params held twice", tt.method)
		}
	}
}
