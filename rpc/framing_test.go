package rpc

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
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
		{"request with a null id", `{"jsonrpc":"2.0","id":null,"method":"initialize"}` + "\n" + req + "\n", NDJSON, 1, []string{"-32600", "leave it out for a notification", `"id":null`}},
		{"request with an object id", `{"jsonrpc":"2.0","id":{},"method":"initialize"}` + "\n", NDJSON, 0, []string{"-32600", "must be a number or a string"}},
		{"request with a negative id", `{"jsonrpc":"2.0","id":-1,"method":"initialize"}` + "\n", NDJSON, 0, []string{"-32600", "negative", `"id":-1`}},
		{"request with a fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"initialize"}` + "\n", NDJSON, 0, []string{"-32600", `"id":1.5`}},
		{"request with a big id", `{"jsonrpc":"2.0","id":123456789012345678901,"method":"initialize"}` + "\n", NDJSON, 0, []string{"-32600", `"id":123456789012345678901`}},
		{"responses with null or no id are dropped", `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"x"}}` + "\n" +
			`{"jsonrpc":"2.0","result":{}}` + "\n" + req + "\n", NDJSON, 1, nil},
		{"invalid responses are not answered", `{"id":3,"result":{}}` + "\n" + `{"jsonrpc":"2.0","id":-3,"result":{}}` + "\n", NDJSON, 0, nil},
		{"a response with an id is read", `{"jsonrpc":"2.0","id":3,"result":null}` + "\n", NDJSON, 1, nil},
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

// TestStreamResynchronisesAfterHeaderLies: each lie about a body, in the
// header block before it, is answered, and every message after it is read.
func TestStreamResynchronisesAfterHeaderLies(t *testing.T) {
	bad := `{"jsonrpc":"2.0","id":"bad","method":"initialize","params":{"protocolVersion":1}}`
	n := len(bad)
	var after strings.Builder
	for i := 1; i <= 5; i++ {
		req := `{"jsonrpc":"2.0","id":` + itoa(i) + `,"method":"initialize"}`
		after.WriteString("Content-Length: " + itoa(len(req)) + "\r\n\r\n" + req)
	}
	tests := []struct {
		name, head string // head precedes "\r\n\r\n" and the body
		body       string
		answers    []string // substrings of the error answers, in order
		served     bool     // the lying message is read too (its own header is found after a bad line)
	}{
		{"not a number", "Content-Length: abc", bad, []string{`-32700`, `not a decimal`}, false},
		{"too short", "Content-Length: " + itoa(n-10), bad, []string{`-32700`, `not valid JSON after the ` + itoa(n-10)}, false},
		{"too long", "Content-Length: " + itoa(n+10), bad, []string{`-32600`, `ended after ` + itoa(n), `"id":"bad"`}, false},
		{"far too long", "Content-Length: " + itoa(n+400), bad, []string{`-32600`, `"id":"bad"`}, false},
		{"zero", "Content-Length: 0", bad, []string{`-32600`, `empty`, `-32700`}, false},
		{"negative", "Content-Length: -" + itoa(n), bad, []string{`-32700`}, false},
		{"float", "Content-Length: " + itoa(n) + ".0", bad, []string{`-32700`}, false},
		{"hex", "Content-Length: 0x" + strconv.FormatInt(int64(n), 16), bad, []string{`-32700`}, false},
		{"signed", "Content-Length: +" + itoa(n), bad, []string{`-32700`}, false},
		{"huge", "Content-Length: 99999999999", bad, []string{`-32600`, `limit`}, false},
		{"beyond int64", "Content-Length: 99999999999999999999999999", bad, []string{`-32600`, `limit`}, false},
		{"missing", "Content-Type: application/vscode-jsonrpc; charset=utf-8", bad, []string{`-32700`, `no Content-Length`}, false},
		{"no colon", "Content-Length " + itoa(n), bad, []string{`-32700`, `no colon`}, false},
		{"NUL", "Content-Length: " + itoa(n)[:1] + "\x00" + itoa(n)[1:], bad, []string{`-32700`, `control character`}, false},
		{"name not a token", "Content Length: " + itoa(n), bad, []string{`-32700`, `token`}, false},
		{"two lengths", "Content-Length: " + itoa(n) + "\r\nContent-Length: " + itoa(n+1), bad, []string{`-32700`, `two different`}, false},
		{"line too long", "X-Pad: " + strings.Repeat("a", 2000) + "\r\nContent-Length: " + itoa(n), bad, []string{`-32700`, `longer than 1024`}, true},
		{"too many lines", strings.Repeat("X-A: b\r\n", 40) + "Content-Length: " + itoa(n), bad, []string{`-32700`, `more than 32`}, true},
		{"no header at all", "", bad, []string{`-32700`}, false},
		{"body with trailing garbage", "Content-Length: " + itoa(n+3), bad + "xyz", []string{`-32600`, `"id":"bad"`, `-32700`, `before Content-Length`}, false},
		{"header after the lie", "Content-Length: " + itoa(n) + "\r\nX-Pad: " + strings.Repeat("a", 2000), bad, []string{`-32700`, `longer than 1024`}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			input := tt.head + "\r\n\r\n" + tt.body + after.String()
			if tt.head == "" {
				input = tt.body + "\r\n" + after.String()
			}
			// Start on a good message so the framing is detected as headers.
			first := `{"jsonrpc":"2.0","id":0,"method":"initialize"}`
			input = "Content-Length: " + itoa(len(first)) + "\r\n\r\n" + first + input
			msgs, written, _ := readAll(t, input, 0)
			if tt.served {
				if len(msgs) != 7 || !strings.Contains(msgs[1], `"id":"bad"`) {
					t.Fatalf("read %q, want the lying message served", msgs)
				}
				msgs = append(msgs[:1], msgs[2:]...)
			}
			if len(msgs) != 6 {
				t.Fatalf("read %d messages %q, want the first and all 5 after the lie; answers %q", len(msgs), msgs, written)
			}
			for i, m := range msgs {
				if !strings.Contains(m, `"id":`+itoa(i)+`,`) {
					t.Errorf("message %d = %s", i, m)
				}
			}
			rest := written
			for _, a := range tt.answers {
				i := strings.Index(rest, a)
				if i < 0 {
					t.Fatalf("answers %q lack %q (in order %q)", written, a, tt.answers)
				}
				rest = rest[i+len(a):]
			}
			if got := strings.Count(written, `"error"`); got > 2 {
				t.Errorf("%d error answers for one lie: %q", got, written)
			}
		})
	}
}

func TestStreamAcceptsHonestHeaderVariants(t *testing.T) {
	req := `{"jsonrpc":"2.0","id":1,"method":"initialize"}`
	for _, head := range []string{
		"Content-Length: 46",
		"content-length:46",
		"CONTENT-LENGTH: \t 46 \t",
		"Content-Length: 0046",
		"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 46",
		"Content-Length: 46\r\nContent-Length: 46",
		"X-Unicode: caf\xc3\xa9\r\nContent-Length: 46",
	} {
		msgs, written, _ := readAll(t, head+"\r\n\r\n"+req+"\n\r\n"+head+"\n\n"+req, 0)
		if len(msgs) != 2 || written != "" {
			t.Errorf("%q: read %q, answered %q", head, msgs, written)
		}
	}
	// Whitespace inside the declared length, after the object, is fine.
	body := req + "\r\n  "
	msgs, written, _ := readAll(t, "Content-Length: "+itoa(len(body))+"\r\n\r\n"+body+"Content-Length: 46\r\n\r\n"+req, 0)
	if len(msgs) != 2 || written != "" {
		t.Errorf("trailing whitespace: read %q, answered %q", msgs, written)
	}
	// Strings and escapes do not end the object early.
	tricky := `{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"}]\"\\","b":["{"]}}`
	msgs, written, _ = readAll(t, "Content-Length: "+itoa(len(tricky))+"\r\n\r\n"+tricky+"Content-Length: 46\r\n\r\n"+req, 0)
	if len(msgs) != 2 || written != "" {
		t.Errorf("tricky strings: read %q, answered %q", msgs, written)
	}
}

func TestStreamCapsHeaderLines(t *testing.T) {
	req := `{"jsonrpc":"2.0","id":1,"method":"initialize"}`
	good := "Content-Length: 46\r\n\r\n" + req
	// 10 MB without a newline: answered once, and the message after it read.
	msgs, written, _ := readAll(t, good+strings.Repeat("x", 10<<20)+good+good, 0)
	if len(msgs) != 3 || strings.Count(written, "-32700") != 1 || !strings.Contains(written, "longer than") {
		t.Fatalf("read %d messages, answered %q", len(msgs), written)
	}
}

// BenchmarkStreamLargeBody reads a 60 MB Content-Length body, whose JSON
// structure is followed as it is read.
func BenchmarkStreamLargeBody(b *testing.B) {
	body := `{"jsonrpc":"2.0","id":1,"method":"x","params":{"text":"` + strings.Repeat(`abc \"q\" `, 6<<20) + `"}}`
	input := "Content-Length: " + itoa(len(body)) + "\r\n\r\n" + body
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		s := NewStream(strings.NewReader(input), io.Discard, nil)
		var v json.RawMessage
		if err := s.ReadObject(&v); err != nil {
			b.Fatal(err)
		}
	}
}
