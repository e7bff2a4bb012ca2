package rpc

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/acp"
)

// frames is a reader that yields one frame n times, then EOF.
type frames struct {
	frame []byte
	left  int
	r     bytes.Reader
}

func (f *frames) Read(p []byte) (int, error) {
	for f.r.Len() == 0 {
		if f.left == 0 {
			return 0, io.EOF
		}
		f.left--
		f.r.Reset(f.frame)
	}
	return f.r.Read(p)
}

// BenchmarkMicroReadPrompt1MiB reads a session/prompt of 1 MiB of text
// through the server's read path, without a session: framing, the
// envelope check, jsonrpc2, the dispatch table and the typed params
// decode and check. The turn is not started (the handler only counts).
func BenchmarkMicroReadPrompt1MiB(b *testing.B) {
	text := strings.Repeat("All work and no play makes Jack a dull boy. ", (1<<20)/44)
	frame := []byte(`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"` + text + `"}]}}` + "\n")
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	srv := NewServer(Options{})
	got, done := 0, make(chan struct{})
	srv.table = map[string]handler{"session/prompt": typed(checkPrompt, func(_ context.Context, p *acp.PromptRequest) (any, error) {
		if len(p.Prompt) != 1 || p.Prompt[0].Text == nil || len(p.Prompt[0].Text.Text) != len(text) {
			b.Errorf("prompt decoded wrong")
		}
		if got++; got == b.N {
			close(done)
		}
		return nil, nil
	})}
	b.ResetTimer()
	srv.connect(context.Background(), NewStream(&frames{frame: frame, left: b.N}, io.Discard, nil))
	<-done
	b.StopTimer()
	srv.conn.Close()
}
