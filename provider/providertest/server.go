package providertest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// Reply is one scripted answer.
type Reply struct {
	// Status defaults to 200.
	Status int
	// Header is added to the response. Content-Type defaults to
	// text/event-stream for 200 and application/json otherwise.
	Header map[string]string
	// Body is sent as is, split into SSE events (at blank lines) that are
	// flushed one by one.
	Body string
	// EventDelay is waited before each event after the first.
	EventDelay time.Duration
	// Gate, if set, holds each event after the first until a value is
	// received from it (or it is closed): the test says when the next
	// event goes, so it can look at what the client did with the ones
	// before, knowing no other has come.
	Gate <-chan struct{}
	// CutAfter, when positive, drops the connection without ending the
	// chunked body after that many events: a mid-stream disconnect.
	CutAfter int
	// HangAfter, when positive, stops sending after that many events and
	// holds the connection open until the client goes away (or the
	// server closes), as a slow model would.
	HangAfter int
}

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
	// Arrived is when the request's headers had been read; At when its
	// body had been too; Done when the reply's last byte was flushed.
	Arrived, At, Done time.Time
}

// Server replays Replies in order; once they run out, it repeats the last.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	replies  []Reply
	requests []Request
	next     int
	gone     chan struct{} // closed when a hanging reply saw its client leave
	done     chan struct{}
}

// MaxHang bounds how long a hanging reply waits, so a test that forgets to
// cancel still ends.
const MaxHang = 30 * time.Second

// NewServer starts a server on 127.0.0.1 that stops when t ends.
func NewServer(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	s := &Server{replies: replies, gone: make(chan struct{}, 16), done: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		close(s.done)
		s.Server.CloseClientConnections()
		s.Server.Close()
	})
	return s
}

// SetReplies replaces the replies still to come.
func (s *Server) SetReplies(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies, s.next = replies, 0
}

// Requests returns a copy of what the server has received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ClientGone returns a channel that receives when a hanging reply notices
// its client closed the connection.
func (s *Server) ClientGone() <-chan struct{} { return s.gone }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	idx := len(s.requests)
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Arrived: arrived, At: time.Now()})
	var rep Reply
	if len(s.replies) > 0 {
		i := min(s.next, len(s.replies)-1)
		rep = s.replies[i]
		s.next++
	}
	s.mu.Unlock()
	if len(s.replies) == 0 {
		http.Error(w, `{"error":{"type":"api_error","message":"providertest: no reply scripted"}}`, http.StatusInternalServerError)
		return
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	if status == http.StatusOK {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	if status != http.StatusOK {
		io.WriteString(w, rep.Body)
		return
	}
	flusher := w.(http.Flusher)
	flusher.Flush()
	for i, ev := range Events(rep.Body) {
		if rep.CutAfter > 0 && i == rep.CutAfter {
			cut(w)
			return
		}
		if rep.HangAfter > 0 && i == rep.HangAfter {
			s.hang(r)
			return
		}
		if i > 0 && rep.Gate != nil {
			select {
			case <-rep.Gate:
			case <-r.Context().Done():
				s.notifyGone()
				return
			case <-s.done:
				return
			}
		}
		if i > 0 && rep.EventDelay > 0 {
			select {
			case <-time.After(rep.EventDelay):
			case <-r.Context().Done():
				s.notifyGone()
				return
			case <-s.done:
				return
			}
		}
		if _, err := io.WriteString(w, ev); err != nil {
			s.notifyGone()
			return
		}
		flusher.Flush()
	}
	s.mu.Lock()
	s.requests[idx].Done = time.Now()
	s.mu.Unlock()
	if rep.HangAfter > 0 {
		s.hang(r)
	}
}

func (s *Server) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
		s.notifyGone()
	case <-s.done:
	case <-time.After(MaxHang):
	}
}

func (s *Server) notifyGone() {
	select {
	case s.gone <- struct{}{}:
	default:
	}
}

// cut closes the connection under the response without the chunked
// terminator, so the client sees an unexpected EOF.
func cut(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("providertest: response writer cannot be hijacked")
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		panic(fmt.Sprintf("providertest: hijack: %v", err))
	}
	buf.Flush()
	conn.Close()
}

// Events splits an SSE body into events, each ending with its blank line.
func Events(body string) []string {
	body = strings.ReplaceAll(body, "\r\n", "\n")
	var out []string
	for _, ev := range strings.SplitAfter(body, "\n\n") {
		if strings.TrimSpace(ev) != "" {
			out = append(out, ev)
		}
	}
	return out
}

// Load reads a recorded file (path relative to the test's directory).
func Load(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read recorded stream: %v", err)
	}
	return string(bytes.TrimLeft(b, "\n"))
}
