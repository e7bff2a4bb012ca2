package provider_test

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/anthropic"
	"github.com/bridle-dev/bridle/provider/openai"
	"github.com/bridle-dev/bridle/provider/providertest"
)

type attempt struct {
	n    int
	kind provider.ErrorKind
	wait time.Duration
}

func TestRetry(t *testing.T) {
	anth := func(name string) string { return providertest.Load(t, "../testdata/anthropic/"+name) }
	oai := func(name string) string { return providertest.Load(t, "../testdata/openai/"+name) }
	newAnthropic := func(url string) provider.Provider { return anthropic.New(anthropic.Config{APIKey: "k", BaseURL: url}) }
	newOpenAI := func(url string) provider.Provider {
		return openai.New(openai.Config{APIKey: "k", BaseURL: url + "/v1"})
	}
	const base = 20 * time.Millisecond

	tests := []struct {
		name     string
		client   func(string) provider.Provider
		replies  []providertest.Reply
		requests int
		retries  []attempt // kind and, when not zero, the exact wait
		text     string
		err      provider.ErrorKind
		partial  bool
	}{
		{
			name:   "529 with retry-after, then overloaded before output, then success",
			client: newAnthropic,
			replies: []providertest.Reply{
				{Status: 529, Header: map[string]string{"retry-after-ms": "5"}, Body: anth("error_529.json")},
				{Body: anth("overloaded_before_output.sse")},
				{Body: anth("text.sse")},
			},
			requests: 3,
			retries:  []attempt{{1, provider.ErrOverloaded, 5 * time.Millisecond}, {2, provider.ErrOverloaded, 0}},
			text:     "Hello! How can I help you today?",
		},
		{
			name:   "429 then a connection dropped before the first token, then success",
			client: newOpenAI,
			replies: []providertest.Reply{
				{Status: 429, Header: map[string]string{"retry-after": "0.01"}, Body: oai("error_429.json")},
				{Body: oai("text.sse"), CutAfter: 1},
				{Body: oai("text.sse")},
			},
			requests: 3,
			retries:  []attempt{{1, provider.ErrRateLimited, 10 * time.Millisecond}, {2, provider.ErrNetwork, 0}},
			text:     "Hello! How can I help?",
		},
		{
			name:     "never retried once text has streamed",
			client:   newAnthropic,
			replies:  []providertest.Reply{{Body: anth("overloaded_mid_stream.sse")}, {Body: anth("text.sse")}},
			requests: 1,
			text:     "Here is the first half",
			err:      provider.ErrOverloaded,
			partial:  true,
		},
		{
			name:     "a dropped connection after text is not retried either",
			client:   newOpenAI,
			replies:  []providertest.Reply{{Body: oai("text.sse"), CutAfter: 3}, {Body: oai("text.sse")}},
			requests: 1,
			text:     "Hello! How can I",
			err:      provider.ErrNetwork,
			partial:  true,
		},
		{
			name:     "a bad key is not retried",
			client:   newAnthropic,
			replies:  []providertest.Reply{{Status: 401, Body: anth("error_401.json")}},
			requests: 1,
			err:      provider.ErrAuth,
		},
		{
			name:     "gives up after the last attempt",
			client:   newAnthropic,
			replies:  []providertest.Reply{{Status: 500, Body: anth("error_500.json")}},
			requests: 3,
			retries:  []attempt{{1, provider.ErrServer, 0}, {2, provider.ErrServer, 0}},
			err:      provider.ErrServer,
		},
		{
			name:     "a retry-after longer than bridle waits ends the call",
			client:   newAnthropic,
			replies:  []providertest.Reply{{Status: 429, Header: map[string]string{"retry-after": "3600"}, Body: anth("error_429.json")}},
			requests: 1,
			err:      provider.ErrRateLimited,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.NewServer(t, tt.replies...)
			var got []attempt
			p := provider.WithRetry(tt.client(srv.URL), provider.RetryPolicy{
				Attempts:      3,
				BaseDelay:     base,
				MaxRetryAfter: time.Minute,
				OnRetry: func(n int, err error, wait time.Duration) {
					pe, _ := provider.AsError(err)
					got = append(got, attempt{n, pe.Kind, wait})
				},
			})
			var c provider.Collector
			var err error
			for d, e := range p.Stream(context.Background(), provider.Request{Model: "m", Messages: []provider.Message{{Role: provider.RoleUser, Parts: []provider.Part{{Kind: provider.PartText, Text: "hi"}}}}}) {
				if e != nil {
					err = e
					break
				}
				c.Add(d)
			}
			if n := len(srv.Requests()); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
			if c.Response().Text != tt.text {
				t.Errorf("text = %q, want %q", c.Response().Text, tt.text)
			}
			if len(got) != len(tt.retries) {
				t.Fatalf("OnRetry calls = %+v, want %+v", got, tt.retries)
			}
			for i, want := range tt.retries {
				g := got[i]
				if g.n != want.n || g.kind != want.kind {
					t.Errorf("retry %d = attempt %d %s, want %d %s", i, g.n, g.kind, want.n, want.kind)
				}
				if want.wait != 0 && g.wait != want.wait {
					t.Errorf("retry %d waited %v, want the server's %v", i, g.wait, want.wait)
				}
				if want.wait == 0 {
					// Exponential with equal jitter: within [d/2, d].
					d := base << (g.n - 1)
					if g.wait < d/2 || g.wait > d {
						t.Errorf("retry %d waited %v, want within [%v, %v]", i, g.wait, d/2, d)
					}
				}
			}
			if tt.err == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			pe, ok := provider.AsError(err)
			if !ok || pe.Kind != tt.err || pe.Partial != tt.partial {
				t.Fatalf("error = %v, want kind %s partial %v", err, tt.err, tt.partial)
			}
			if pe.Partial && pe.Retryable {
				t.Error("a partial error is still marked retryable")
			}
		})
	}
}

// TestRetryWaitIsCancellable checks that cancelling during a backoff ends
// the call at once instead of after the wait.
func TestRetryWaitIsCancellable(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Status: 529, Body: providertest.Load(t, "../testdata/anthropic/error_529.json")})
	ctx, cancel := context.WithCancel(context.Background())
	p := provider.WithRetry(anthropic.New(anthropic.Config{APIKey: "k", BaseURL: srv.URL}), provider.RetryPolicy{
		BaseDelay: time.Hour,
		MaxDelay:  time.Hour,
		OnRetry:   func(int, error, time.Duration) { cancel() },
	})
	start := time.Now()
	var err error
	for _, e := range p.Stream(ctx, provider.Request{Model: "m"}) {
		err = e
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("the wait was not cut short by the cancellation")
	}
}

// TestRetryRefusedOnce: where nothing listens (connection refused) the
// call is tried twice, not Attempts times, so the user is not kept
// waiting for a server that is not there.
func TestRetryRefusedOnce(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	var retries int
	p := provider.WithRetry(openai.New(openai.Config{APIKey: "k", BaseURL: url + "/v1"}),
		provider.RetryPolicy{Attempts: 5, BaseDelay: time.Millisecond, OnRetry: func(int, error, time.Duration) { retries++ }})
	var last error
	for _, err := range p.Stream(context.Background(), provider.Request{Model: "m"}) {
		if err != nil {
			last = err
		}
	}
	pe, ok := provider.AsError(last)
	if !ok || pe.Kind != provider.ErrNetwork || !errors.Is(last, syscall.ECONNREFUSED) {
		t.Fatalf("err = %v, want a refused connection", last)
	}
	if retries != 1 {
		t.Errorf("%d retries, want 1", retries)
	}
}
