package lsp

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// frame is one Content-Length message.
func frame(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }

// TestStreamBounds: what a server sends is read within bounds: a message
// over the limit is skipped, and the request it answers fails saying so;
// a message that is not JSON is dropped; a header that breaks the
// framing ends the connection.
func TestStreamBounds(t *testing.T) {
	big := strings.Repeat("x", 200)
	tests := []struct {
		name    string
		in      string
		want    []string // the messages read, as JSON, in order
		dropped []string // what the drops said
		err     string   // the error reading ends with ("": EOF)
	}{
		{name: "two messages", in: frame(`{"jsonrpc":"2.0","id":1,"result":1}`) + frame(`{"jsonrpc":"2.0","method":"m"}`),
			want: []string{`{"jsonrpc":"2.0","id":1,"result":1}`, `{"jsonrpc":"2.0","method":"m"}`}},
		{name: "an answer over the limit fails its request", in: frame(`{"jsonrpc":"2.0","id":7,"result":"`+big+`"}`) + frame(`{"jsonrpc":"2.0","method":"after"}`),
			want: []string{`{"error":{"code":-32603,"message":"the server's answer was cut off: a message of 236 bytes, over the 100-byte limit, was cut off"},"id":7,"jsonrpc":"2.0"}`,
				`{"jsonrpc":"2.0","method":"after"}`},
			dropped: []string{"a message of 236 bytes, over the 100-byte limit, was cut off"}},
		{name: "a notification over the limit is dropped", in: frame(`{"jsonrpc":"2.0","method":"m","params":"`+big+`"}`) + frame(`{"jsonrpc":"2.0","id":2,"result":null}`),
			want:    []string{`{"jsonrpc":"2.0","id":2,"result":null}`},
			dropped: []string{"over the 100-byte limit"}},
		{name: "an id after the first 64 KiB is not found", in: frame(`{"jsonrpc":"2.0","result":"` + strings.Repeat("x", 70000) + `","id":3}`),
			dropped: []string{"over the 100-byte limit"}},
		{name: "not JSON", in: frame(`{"jsonrpc":`) + frame(`{"jsonrpc":"2.0","id":4,"result":4}`),
			want: []string{`{"jsonrpc":"2.0","id":4,"result":4}`}, dropped: []string{"not JSON-RPC"}},
		{name: "no length", in: "Content-Type: x\r\n\r\n{}", err: "without Content-Length"},
		{name: "a bad length", in: "Content-Length: -3\r\n\r\n{}", err: "not a length"},
		{name: "a header line without end", in: "Content-Length: 2" + strings.Repeat(" ", 2000), err: "more than 1024 bytes"},
		{name: "too many header lines", in: strings.Repeat("X-A: b\r\n", 40), err: "more than 32 lines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dropped []string
			s := newStream(strings.NewReader(tt.in), nil, func() error { return nil }, func(why string) { dropped = append(dropped, why) }, func(error) {})
			s.max = 100
			var got []string
			var err error
			for {
				var v json.RawMessage
				if err = s.ReadObject(&v); err != nil {
					break
				}
				got = append(got, string(v))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if len(dropped) != len(tt.dropped) {
				t.Errorf("dropped %q, want %q", dropped, tt.dropped)
			}
			for i, d := range tt.dropped {
				if i < len(dropped) && !strings.Contains(dropped[i], d) {
					t.Errorf("drop %q does not say %q", dropped[i], d)
				}
			}
			switch {
			case tt.err == "" && err != io.EOF:
				t.Errorf("reading ended with %v, want EOF", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("reading ended with %v, want %q", err, tt.err)
			}
		})
	}
}

// TestStreamWriteToAServerThatDoesNotRead: a write to a server that does
// not read fails after the write timeout, and ends the connection.
func TestStreamWriteToAServerThatDoesNotRead(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	closed := make(chan struct{})
	var broke error
	s := newStream(strings.NewReader(""), w, func() error { close(closed); return w.Close() }, func(string) {}, func(err error) { broke = err })
	s.writeTimeout = 100 * time.Millisecond
	err = s.WriteObject(strings.Repeat("x", 1<<20))
	if err == nil || !strings.Contains(err.Error(), "stopped reading its input") || broke == nil {
		t.Fatalf("write: %v (broke %v)", err, broke)
	}
	select {
	case <-closed:
	default:
		t.Fatal("the connection was not ended")
	}
}
