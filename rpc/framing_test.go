package rpc

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// readAll reads every message the stream accepts and returns them with
// everything the stream wrote back (its error answers).
func readAll(t *testing.T, input string, limit int) (msgs []string, written string, framing Framing) {
	t.Helper()
	var out bytes.Buffer
	s := NewStream(strings.NewReader(input), &out, nil)
	if limit > 0 {
		s.limit = limit
	}
	for {
		var v json.RawMessage
		err := s.ReadObject(&v)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			t.Fatalf("ReadObject: %v", err)
		}
		msgs = append(msgs, string(v))
	}
	return msgs, out.String(), s.Framing()
}

func TestStreamReadsBothFramings(t *testing.T) {
	req := `{"jsonrpc":"2.0","id":1,"method":"initialize"}`
	cl := func(body string) string { return "Content-Length: " + itoa(len(body)) + "\r\n\r\n" + body }
	tests := []struct {
		name    string
		input   string
		framing Framing
		msgs    int
		answers []string // substrings of error answers, in order
	}{
		{"ndjson", req + "\n" + req + "\n", NDJSON, 2, nil},
		{"ndjson without a final newline", req, NDJSON, 1, nil},
		{"ndjson with blank lines and leading space", "\n  \n" + req + "\n\n" + req + "\n", NDJSON, 2, nil},
		{"content-length", cl(req) + cl(req), ContentLength, 2, nil},
		{"content-length, header case and extra headers", "content-length: 46\r\nContent-Type: application/vscode-jsonrpc\r\n\r\n" + req, ContentLength, 1, nil},
		{"ndjson malformed then fine", "{oops\n" + req + "\n", NDJSON, 1, []string{"-32700"}},
		{"ndjson batch and scalar", "[" + req + "]\n" + "42\n" + req + "\n", NDJSON, 1, []string{"batch", "must be a JSON object"}},
		{"missing jsonrpc version", `{"id":1,"method":"x"}` + "\n", NDJSON, 0, []string{"must be", "2.0"}},
		{"neither request nor response", `{"jsonrpc":"2.0","id":1}` + "\n", NDJSON, 0, []string{"a message needs"}},
		{"content-length malformed body then fine", cl("{oops}") + cl(req), ContentLength, 1, []string{"-32700"}},
		{"content-length bad header line then fine", "Content-Length 5\r\n\r\n" + cl(req), ContentLength, 1, []string{"not a header line"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, written, framing := readAll(t, tt.input, 0)
			if framing != tt.framing {
				t.Errorf("framing = %v, want %v", framing, tt.framing)
			}
			if len(msgs) != tt.msgs {
				t.Errorf("read %d messages %q, want %d", len(msgs), msgs, tt.msgs)
			}
			rest := written
			for _, a := range tt.answers {
				i := strings.Index(rest, a)
				if i < 0 {
					t.Fatalf("answers %q lack %q", written, a)
				}
				rest = rest[i:]
			}
			if len(tt.answers) == 0 && written != "" {
				t.Errorf("unexpected answers: %q", written)
			}
		})
	}
}

func TestStreamSkipsOversizedMessages(t *testing.T) {
	req := `{"jsonrpc":"2.0","id":1,"method":"initialize"}`
	big := `{"jsonrpc":"2.0","id":2,"method":"x","params":"` + strings.Repeat("a", 500) + `"}`
	for _, tt := range []struct{ name, input string }{
		{"ndjson", big + "\n" + req + "\n"},
		{"content-length", "Content-Length: " + itoa(len(big)) + "\r\n\r\n" + big + "Content-Length: " + itoa(len(req)) + "\r\n\r\n" + req},
	} {
		t.Run(tt.name, func(t *testing.T) {
			msgs, written, _ := readAll(t, tt.input, 100)
			if len(msgs) != 1 || !strings.Contains(msgs[0], `"id":1`) {
				t.Fatalf("messages = %q, want only the small one", msgs)
			}
			if !strings.Contains(written, "-32600") || !strings.Contains(written, "limit") {
				t.Fatalf("answer = %q", written)
			}
		})
	}
}

func TestStreamAnswersInTheClientsFraming(t *testing.T) {
	for _, tt := range []struct {
		input, prefix string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"a"}` + "\n", `{"x":1}` + "\n"},
		{"Content-Length: 37\r\n\r\n" + `{"jsonrpc":"2.0","id":1,"method":"a"}`, "Content-Length: 7\r\n\r\n{\"x\":1}"},
	} {
		var out bytes.Buffer
		s := NewStream(strings.NewReader(tt.input), &out, nil)
		var v json.RawMessage
		if err := s.ReadObject(&v); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteObject(map[string]int{"x": 1}); err != nil {
			t.Fatal(err)
		}
		if out.String() != tt.prefix {
			t.Errorf("wrote %q, want %q", out.String(), tt.prefix)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
