package rpc

import "testing"

func TestFrameHead(t *testing.T) {
	for _, tc := range []struct {
		in     string
		method string
		id     any
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"prompt":[{"type":"text","text":"xxxx`, "session/prompt", int64(7)},
		{`{"id":"a-1","jsonrpc":"2.0","method":"session/prompt","params":`, "session/prompt", "a-1"},
		{`{"method":"session/prompt","params":{"sessionId":"s","prompt":[{"text":"long`, "session/prompt", nil},
		{`{"jsonrpc":"2.0","id":-1,"method":"session/prompt"`, "session/prompt", nil},
		{`{"jsonrpc":"2.0","id":3,"method":"session/load"}`, "session/load", int64(3)},
		{`[1,2`, "", nil},
		{`not json`, "", nil},
	} {
		m, id := frameHead([]byte(tc.in))
		if m != tc.method || id != tc.id {
			t.Errorf("frameHead(%.40q) = %q, %v; want %q, %v", tc.in, m, id, tc.method, tc.id)
		}
	}
}
