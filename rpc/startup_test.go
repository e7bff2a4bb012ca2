package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/session"
)

// startup is a Server serving pipes with an opener the test controls:
// opened is closed when the opener is called, and it fails with "the
// disk is full" once release is closed.
type startup struct {
	t       *testing.T
	in      *io.PipeWriter
	out     *bufio.Reader
	opened  chan struct{}
	release chan struct{}
	done    chan startResult
}

type startResult struct {
	clean bool
	err   error
}

func serveStartup(t *testing.T) *startup {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &startup{t: t, in: inW, out: bufio.NewReader(outR), opened: make(chan struct{}), release: make(chan struct{}), done: make(chan startResult, 1)}
	srv := NewServer(Options{Version: "test"})
	go func() {
		clean, err := srv.Serve(context.Background(), NewStream(inR, outW, inR), func(ctx context.Context) (*session.Manager, error) {
			close(s.opened)
			<-s.release
			return nil, errors.New("the disk is full")
		})
		outW.Close()
		s.done <- startResult{clean, err}
	}()
	return s
}

func (s *startup) send(msg string) {
	io.WriteString(s.in, msg+"\n")
}

func (s *startup) answer() map[string]json.RawMessage {
	s.t.Helper()
	line, err := s.out.ReadBytes('\n')
	if err != nil {
		s.t.Fatalf("no answer: %v", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		s.t.Fatalf("answer %s: %v", line, err)
	}
	return m
}

func (s *startup) wantCause(m map[string]json.RawMessage, id string) {
	s.t.Helper()
	if string(m["id"]) != id || !strings.Contains(string(m["error"]), "-32603") || !strings.Contains(string(m["error"]), "the disk is full") {
		s.t.Errorf("request %s answered %s %s, want -32603 naming the cause", id, m["id"], m["error"])
	}
}

// initialize is answered before the manager starts opening (on two busy
// cores, opening the database took the CPU from the answer); the opener
// starts once the answer is out, the next message waits for it, and is
// answered -32603 when it cannot be opened, which Serve returns.
func TestInitializeIsAnsweredBeforeTheManagerOpens(t *testing.T) {
	s := serveStartup(t)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	// The answer is written to a pipe nobody has read yet: the opener
	// must not have started.
	select {
	case <-s.opened:
		t.Fatal("the manager started opening before initialize was answered")
	default:
	}
	if m := s.answer(); string(m["id"]) != "1" || m["result"] == nil {
		t.Fatalf("initialize answered %v", m)
	}
	<-s.opened
	s.send(`{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}`)
	close(s.release)
	s.wantCause(s.answer(), "2")
	s.in.Close()
	if r := <-s.done; r.clean || r.err == nil {
		t.Errorf("Serve returned %v, %v; want the opener's error", r.clean, r.err)
	}
}

// An editor that skips initialize still gets its manager: the first
// message starts the opener and waits for it.
func TestAFirstMessageOtherThanInitializeOpensTheManager(t *testing.T) {
	s := serveStartup(t)
	s.send(`{"jsonrpc":"2.0","id":7,"method":"session/list","params":{}}`)
	<-s.opened
	close(s.release)
	s.wantCause(s.answer(), "7")
	s.in.Close()
	if r := <-s.done; r.clean || r.err == nil {
		t.Errorf("Serve returned %v, %v; want the opener's error", r.clean, r.err)
	}
}

// A connection that ends before asking anything never opens the manager
// (nor the database), and ends cleanly.
func TestAConnectionThatAsksNothingOpensNothing(t *testing.T) {
	s := serveStartup(t)
	close(s.release) // an opener called anyway fails at once
	s.in.Close()
	r := <-s.done
	if !r.clean || r.err != nil {
		t.Errorf("Serve returned %v, %v; want a clean end", r.clean, r.err)
	}
	select {
	case <-s.opened:
		t.Error("the manager was opened for a connection that asked nothing")
	default:
	}
}
