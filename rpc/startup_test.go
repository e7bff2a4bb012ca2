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

// initialize is answered while the manager is still being opened; the
// next message waits for it, and is answered -32603 when it cannot be
// opened, which Serve returns.
func TestInitializeIsAnsweredBeforeTheManagerOpens(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	release := make(chan struct{})
	opened := make(chan struct{})
	srv := NewServer(Options{Version: "test"})
	type result struct {
		clean bool
		err   error
	}
	done := make(chan result, 1)
	go func() {
		clean, err := srv.Serve(context.Background(), NewStream(inR, outW, inR), func(ctx context.Context) (*session.Manager, error) {
			close(opened)
			<-release
			return nil, errors.New("the disk is full")
		})
		outW.Close()
		done <- result{clean, err}
	}()
	out := bufio.NewReader(outR)
	answer := func() map[string]json.RawMessage {
		t.Helper()
		line, err := out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("answer %s: %v", line, err)
		}
		return m
	}
	<-opened
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n")
	if m := answer(); string(m["id"]) != "1" || m["result"] == nil {
		t.Fatalf("initialize answered %v while the manager opened", m)
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}`+"\n")
	close(release)
	m := answer()
	if string(m["id"]) != "2" || !strings.Contains(string(m["error"]), "-32603") || !strings.Contains(string(m["error"]), "the disk is full") {
		t.Errorf("session/list answered %s %s, want -32603 naming the cause", m["id"], m["error"])
	}
	inW.Close()
	if r := <-done; r.clean || r.err == nil {
		t.Errorf("Serve returned %v, %v; want the opener's error", r.clean, r.err)
	}
}
