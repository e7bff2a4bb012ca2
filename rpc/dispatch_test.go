package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bridle-dev/bridle/acp"
)

// request is a request as jsonrpc2 hands it over (without params: the
// stream holds them) and its params.
func request(method, params string) (context.Context, *jsonrpc2.Request, json.RawMessage) {
	return context.Background(), &jsonrpc2.Request{Method: method, ID: jsonrpc2.ID{Num: 7}}, json.RawMessage(params)
}

// typed decodes the params into the method's ACP type and checks its
// required fields before the handler runs; every failure is a -32602
// naming the field.
func TestTypedHandlersCheckParamsBeforeRunning(t *testing.T) {
	var got *acp.PromptRequest
	h := typed(checkPrompt, func(_ context.Context, p *acp.PromptRequest) (any, error) {
		got = p
		return nil, nil
	})
	for params, want := range map[string]string{
		`{"prompt":[]}`:     `"sessionId" is required`,
		`{"sessionId":"s"}`: `"prompt" is required`,
		`{"sessionId":"s","prompt":[{"text":"no type"}]}`: `"type" is required`,
		`{"sessionId":"s","prompt":[{"type":"video"}]}`:   `"video" is not a ContentBlock`,
		`{"sessionId":5,"prompt":[]}`:                     `"sessionId" must be a string`,
		`{"sessionId":"s","prompt":[],"_meta":5}`:         `"_meta" must be an object`,
		`[1]`: `must be a JSON object`,
	} {
		got = nil
		_, err := h(request("session/prompt", params))
		var pe *paramError
		if !errors.As(err, &pe) || !strings.Contains(pe.msg, want) {
			t.Errorf("%s: %v, want -32602 saying %s", params, err, want)
		}
		if got != nil {
			t.Errorf("%s: the handler ran", params)
		}
	}
	if _, err := h(request("session/prompt", `{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}`)); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.SessionID != "s" || got.Prompt[0].Text == nil || got.Prompt[0].Text.Text != "hi" {
		t.Errorf("handler got %+v", got)
	}
}

// The cancellation middleware registers the request's id for as long as
// it runs, a later result included, refuses a second request with an id
// in use, and frees the id before the answer.
func TestCancellableHoldsTheIDUntilTheAnswer(t *testing.T) {
	s := NewServer(Options{})
	release := make(chan struct{})
	var rctx context.Context
	h := s.cancellable(func(ctx context.Context, _ *jsonrpc2.Request, _ json.RawMessage) (any, error) {
		rctx = ctx
		return later(func() (any, error) {
			<-release
			return "done", nil
		}), nil
	})
	ctx, req, params := request("session/prompt", `{}`)
	res, err := h(ctx, req, params)
	wait, ok := res.(later)
	if err != nil || !ok {
		t.Fatalf("result %v, %v; want a later result", res, err)
	}
	if _, err := h(ctx, req, params); err == nil || toRPCError(err).Code != CodeInvalidRequest {
		t.Errorf("a second request with id 7 while the first runs: %v, want -32600", err)
	}
	if err := s.cancelRequest("requestId", json.RawMessage(`7`)); err != nil {
		t.Fatal(err)
	}
	if rctx.Err() == nil {
		t.Errorf("$/cancel_request with the id did not cancel the request's context")
	}
	close(release)
	if v, err := wait(); v != "done" || err != nil {
		t.Errorf("later gave %v, %v", v, err)
	}
	s.mu.Lock()
	n := len(s.inflight)
	s.mu.Unlock()
	if n != 0 {
		t.Errorf("the id is still held after the answer")
	}
}
