package providertest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/provider"
)

// Target is an HTTP provider under the checks every such provider must
// pass: its recorded streams decoded, its error answers and broken
// streams classified, a stopped stream's connection closed. Each
// provider's test brings its own cases (recordings and error bodies); the
// checking is the same.
type Target struct {
	// Name is the provider's default name, which its errors begin with.
	Name string
	// Model is the model the requests ask for.
	Model string
	// New makes a client for the server at baseURL (a URL without a
	// path); name is the client's name, "" for its default.
	New func(baseURL, name string) provider.Provider
}

// play answers Hello with reply to a client named name ("" for the
// default) and collects what it streamed.
func (tg Target) play(t *testing.T, reply Reply, name string) (provider.Response, []provider.Delta, error) {
	t.Helper()
	srv := NewServer(t, reply)
	return Collect(t, tg.New(srv.URL, name), Hello(tg.Model))
}

// Decoded is a recorded stream and what it must amount to.
type Decoded struct {
	Name     string // the subtest's name
	Provider string // the client's name, "" for the default
	Reply    Reply
	Text     string
	Thinking string
	// Signature is the thinking's signature.
	Signature string
	Calls     []provider.ToolCall
	Stop      provider.StopReason
	Usage     provider.Usage
	// ArgPieces is the fewest argument deltas the calls arrive in: an API
	// that streams arguments must be seen to send them in pieces.
	ArgPieces int
}

// Decodes checks that each recorded stream amounts to what it should,
// that every started tool call is ended, and that the stop comes last.
func (tg Target) Decodes(t *testing.T, cases []Decoded) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			resp, deltas, err := tg.play(t, tt.Reply, tt.Provider)
			if err != nil {
				t.Fatalf("stream failed: %v", err)
			}
			if resp.Text != tt.Text {
				t.Errorf("text = %q, want %q", resp.Text, tt.Text)
			}
			if resp.Thinking != tt.Thinking || resp.Signature != tt.Signature {
				t.Errorf("thinking = %q (signature %q), want %q (%q)", resp.Thinking, resp.Signature, tt.Thinking, tt.Signature)
			}
			if resp.StopReason != tt.Stop {
				t.Errorf("stop = %q, want %q", resp.StopReason, tt.Stop)
			}
			if resp.Usage != tt.Usage {
				t.Errorf("usage = %+v, want %+v", resp.Usage, tt.Usage)
			}
			if len(resp.ToolCalls) != len(tt.Calls) {
				t.Fatalf("tool calls = %+v, want %+v", resp.ToolCalls, tt.Calls)
			}
			for i, want := range tt.Calls {
				got := resp.ToolCalls[i]
				if got.ID != want.ID || got.Name != want.Name || string(got.Input) != string(want.Input) {
					t.Errorf("tool call %d = %s %s %s, want %s %s %s", i, got.ID, got.Name, got.Input, want.ID, want.Name, want.Input)
				}
			}
			starts, ends, args := 0, 0, 0
			for _, d := range deltas {
				switch d.Kind {
				case provider.DeltaToolStart:
					starts++
				case provider.DeltaToolEnd:
					ends++
				case provider.DeltaToolArgs:
					args++
				}
			}
			if starts != len(tt.Calls) || ends != len(tt.Calls) || args < tt.ArgPieces {
				t.Errorf("tool deltas: %d starts, %d ends, %d argument pieces for %d calls (want at least %d pieces)", starts, ends, args, len(tt.Calls), tt.ArgPieces)
			}
			if last := deltas[len(deltas)-1]; last.Kind != provider.DeltaStop {
				t.Errorf("last delta is %v, want the stop", last.Kind)
			}
		})
	}
}

// HTTPFailure is an error answer (Reply.Status, its body and headers) and
// how it must be classified.
type HTTPFailure struct {
	Name     string // the subtest's name
	Provider string // the client's name, "" for the default
	Reply    Reply
	Kind     provider.ErrorKind
	// Retryable and RetryAfter are what the error must say of a retry.
	Retryable  bool
	RetryAfter time.Duration
	// Says is what the message must contain besides the provider and the
	// status it begins with.
	Says string
}

// HTTPErrors checks that each error answer fails the stream before any
// delta with a provider.Error of the wanted kind, status and retry, whose
// message names the provider, the status and what went wrong.
func (tg Target) HTTPErrors(t *testing.T, cases []HTTPFailure) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			_, deltas, err := tg.play(t, tt.Reply, tt.Provider)
			if len(deltas) != 0 {
				t.Errorf("got %d deltas before the error", len(deltas))
			}
			pe, ok := provider.AsError(err)
			if !ok {
				t.Fatalf("error %v (%T) is not a provider.Error", err, err)
			}
			if pe.Kind != tt.Kind || pe.Retryable != tt.Retryable || pe.Status != tt.Reply.Status || pe.Partial {
				t.Errorf("got kind %s retryable %v status %d partial %v; want %s %v %d false", pe.Kind, pe.Retryable, pe.Status, pe.Partial, tt.Kind, tt.Retryable, tt.Reply.Status)
			}
			if pe.RetryAfter != tt.RetryAfter {
				t.Errorf("retry after %v, want %v", pe.RetryAfter, tt.RetryAfter)
			}
			msg := pe.Error()
			if !strings.HasPrefix(msg, cmp.Or(tt.Provider, tg.Name)+" (HTTP ") || !strings.Contains(msg, tt.Says) {
				t.Errorf("message %q should name the provider, the status and %q", msg, tt.Says)
			}
		})
	}
}

// StreamFailure is a stream that breaks (an error event, an early end, a
// cut connection) and how the failure must be classified, with the text
// received before it.
type StreamFailure struct {
	Name      string // the subtest's name
	Reply     Reply
	Text      string
	Kind      provider.ErrorKind
	Partial   bool
	Retryable bool
}

// StreamFailures checks that each broken stream ends with a provider.Error
// of the wanted kind, marked partial and retryable as it should be, and
// that the text before the break is kept.
func (tg Target) StreamFailures(t *testing.T, cases []StreamFailure) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			resp, _, err := tg.play(t, tt.Reply, "")
			pe, ok := provider.AsError(err)
			if !ok {
				t.Fatalf("error %v (%T) is not a provider.Error", err, err)
			}
			if pe.Kind != tt.Kind || pe.Partial != tt.Partial || pe.Retryable != tt.Retryable {
				t.Errorf("got kind %s partial %v retryable %v; want %s %v %v (%v)", pe.Kind, pe.Partial, pe.Retryable, tt.Kind, tt.Partial, tt.Retryable, pe)
			}
			if resp.Text != tt.Text {
				t.Errorf("partial text = %q, want %q", resp.Text, tt.Text)
			}
		})
	}
}

// ClosesStream checks that a stream stopped mid-response closes its
// connection at once, whether its context is cancelled (the stream then
// ends with context.Canceled, the text so far kept) or its consumer stops
// iterating. reply must hang after the first text delta, whose text is
// text.
func (tg Target) ClosesStream(t *testing.T, reply Reply, text string) {
	t.Helper()
	t.Run("cancel", func(t *testing.T) {
		srv := NewServer(t, reply)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var c provider.Collector
		var err error
		for d, e := range tg.New(srv.URL, "").Stream(ctx, Hello(tg.Model)) {
			if e != nil {
				err = e
				break
			}
			c.Add(d)
			if d.Kind == provider.DeltaText {
				cancel()
			}
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v, want context.Canceled", err)
		}
		if got := c.Response().Text; got != text {
			t.Errorf("partial text = %q, want %q", got, text)
		}
		waitGone(t, srv)
	})
	t.Run("stop early", func(t *testing.T) {
		srv := NewServer(t, reply)
		for d, err := range tg.New(srv.URL, "").Stream(context.Background(), Hello(tg.Model)) {
			if err != nil {
				t.Fatal(err)
			}
			if d.Kind == provider.DeltaText {
				break
			}
		}
		waitGone(t, srv)
	})
}

func waitGone(t *testing.T, srv *Server) {
	t.Helper()
	select {
	case <-srv.ClientGone():
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the connection close")
	}
}

// Unreachable checks that a client named name (or "" for the default)
// whose server is not listening fails with a retryable network error,
// not partial, that names the address; it returns the error and the
// address for the provider's own checks of the message.
func (tg Target) Unreachable(t *testing.T, name string) (*provider.Error, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, _, err = Collect(t, tg.New("http://"+addr, name), Hello(tg.Model))
	pe, ok := provider.AsError(err)
	if !ok || pe.Kind != provider.ErrNetwork || !pe.Retryable || pe.Partial {
		t.Fatalf("error = %#v, want a retryable network error", err)
	}
	if !strings.Contains(pe.Error(), addr) {
		t.Errorf("message %q does not name the address", pe.Error())
	}
	return pe, addr
}

// Send streams req from p, a client of srv, fails the test if the stream
// fails, and returns the one request srv saw.
func Send(t testing.TB, srv *Server, p provider.Provider, req provider.Request) Request {
	t.Helper()
	if _, _, err := Collect(t, p, req); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server saw %d requests, want 1", len(reqs))
	}
	return reqs[0]
}

// JSONEqual reports whether a and b are the same JSON value, whatever
// their spacing and key order.
func JSONEqual(a json.RawMessage, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}
