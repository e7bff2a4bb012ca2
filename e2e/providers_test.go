package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/provider/providertest"
)

// These tests run the real binary against local servers that replay
// recorded Anthropic and OpenAI streams, so every byte bridle sends to a
// provider and every byte it reads back crosses a real socket.

func recorded(t *testing.T, path string) string {
	t.Helper()
	return providertest.Load(t, acptest.Root()+"/testdata/"+path)
}

// fake describes one provider endpoint for a test.
type fake struct {
	name  string
	model string
	env   func(url string) []string
	// files of the recorded streams, by role
	toolCall, text  string
	overloaded      providertest.Reply
	overloadedAgain providertest.Reply
}

func fakes(t *testing.T) []fake {
	return []fake{
		{
			name:  "anthropic",
			model: "anthropic/claude-sonnet-4-5",
			env: func(url string) []string {
				return []string{"ANTHROPIC_API_KEY=sk-ant-e2e", "ANTHROPIC_BASE_URL=" + url}
			},
			toolCall:        recorded(t, "anthropic/tool_use.sse"),
			text:            recorded(t, "anthropic/text.sse"),
			overloaded:      providertest.Reply{Status: 529, Header: map[string]string{"retry-after-ms": "20"}, Body: recorded(t, "anthropic/error_529.json")},
			overloadedAgain: providertest.Reply{Body: recorded(t, "anthropic/overloaded_before_output.sse")},
		},
		{
			name:  "openai",
			model: "openai/gpt-4.1",
			env: func(url string) []string {
				return []string{"OPENAI_API_KEY=sk-oai-e2e", "OPENAI_BASE_URL=" + url + "/v1"}
			},
			toolCall:        recorded(t, "openai/tool_calls.sse"),
			text:            recorded(t, "openai/text.sse"),
			overloaded:      providertest.Reply{Status: 429, Header: map[string]string{"retry-after": "0.02"}, Body: recorded(t, "openai/error_429.json")},
			overloadedAgain: providertest.Reply{Body: recorded(t, "openai/error_before_output.sse")},
		},
		{
			name:  "ollama",
			model: "ollama/qwen3-coder",
			env: func(url string) []string {
				return []string{"OLLAMA_HOST=" + strings.TrimPrefix(url, "http://")}
			},
			toolCall:        recorded(t, "openai/ollama_tool_call.sse"),
			text:            recorded(t, "openai/text.sse"),
			overloaded:      providertest.Reply{Status: 503, Body: `{"error":{"message":"server busy, please try again. maximum pending requests exceeded","type":"api_error"}}`},
			overloadedAgain: providertest.Reply{Body: recorded(t, "openai/error_before_output.sse")},
		},
	}
}

// isolated is the environment of an agent that sees no provider but the
// ones a test names, and no settings but its own.
func isolated(t *testing.T, extra ...string) []string {
	home := t.TempDir()
	env := append([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + home + "/.config"}, noProviders()...)
	return append(env, extra...)
}

// noProviders blanks the variables that would give bridle a provider, or
// a key, of the machine running the tests; a test sets its own after.
func noProviders() []string {
	return []string{"ANTHROPIC_API_KEY=", "ANTHROPIC_AUTH_TOKEN=", "ANTHROPIC_BASE_URL=", "OPENAI_API_KEY=", "OPENAI_BASE_URL=", "OLLAMA_HOST=127.0.0.1:1"}
}

func eventsOf(events []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, e := range events {
		if e["kind"] == kind {
			out = append(out, e["payload"].(map[string]any))
		}
	}
	return out
}

func TestProviderToolRoundTrip(t *testing.T) {
	for _, f := range fakes(t) {
		t.Run(f.name, func(t *testing.T) {
			srv := providertest.NewServer(t, providertest.Reply{Body: f.toolCall}, providertest.Reply{Body: f.text})
			ws := acptest.Workspace(t, map[string]string{"README.md": "# e2e readme\n", "go.mod": "module example.com/e2e\n"})
			a := acptest.Start(t, acptest.Options{Model: f.model, Env: isolated(t, f.env(srv.URL)...)})
			a.Initialize()
			sid := a.NewSession(ws)
			if stop := a.Prompt(sid, "read the readme and go.mod"); stop != "end_turn" {
				t.Fatalf("stopReason = %q; stderr:\n%s", stop, a.Stderr())
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("provider got %d requests, want 2 (the call, then its results)", len(reqs))
			}
			second := string(reqs[1].Body)
			// Both results went back, each tied to its call, with the
			// files' contents.
			for _, want := range []string{"e2e readme", "module example.com/e2e"} {
				if !strings.Contains(second, want) {
					t.Errorf("second request lacks the tool result %q:\n%s", want, second)
				}
			}
			switch f.name {
			case "anthropic":
				for _, id := range []string{"toolu_01T1x1fJ34qAmk2tNTrN7Up6", "toolu_01Ak3MwZJ9bE8wVx1pQxh3Lr"} {
					if !strings.Contains(second, `"tool_use_id":"`+id+`"`) {
						t.Errorf("no tool_result for %s", id)
					}
				}
			default:
				if strings.Count(second, `"role":"tool"`) != 2 {
					t.Errorf("want two tool-role messages:\n%s", second)
				}
			}
			if !strings.Contains(second, `"model":"`+strings.SplitN(f.model, "/", 2)[1]+`"`) {
				t.Errorf("second request does not name the pinned model")
			}
			text := strings.Join(acptest.Transcript(a.Updates(sid)), "\n")
			if !strings.Contains(text, "agent_message_chunk: Hello") {
				t.Errorf("final answer not streamed to the editor:\n%s", text)
			}
			events := acptest.Log(t, a.DB, sid)
			if n := len(eventsOf(events, "tool_result")); n != 2 {
				t.Errorf("%d tool results logged, want 2: %s", n, acptest.Kinds(events))
			}
			a.AssertValid(t)
		})
	}
}

// TestProviderCancelMidStreamKeepsPartialText: a stream that hangs after
// its second piece is cancelled; what came is shown, and kept. (The first
// piece, "Hello", a line's first word of base64 letters only, is shown
// with the next: a key block's end line after it would make it a key's.)
func TestProviderCancelMidStreamKeepsPartialText(t *testing.T) {
	for _, f := range fakes(t)[:2] {
		t.Run(f.name, func(t *testing.T) {
			hang, partial := 5, "Hello! How can I help" // anthropic: message_start, block start, ping, "Hello", "! How can I help"
			if f.name != "anthropic" {
				hang, partial = 3, "Hello! How can I" // role chunk, "Hello", "! How can I"
			}
			srv := providertest.NewServer(t, providertest.Reply{Body: f.text, HangAfter: hang})
			a := acptest.Start(t, acptest.Options{Model: f.model, Env: isolated(t, f.env(srv.URL)...)})
			a.Initialize()
			sid := a.NewSession(acptest.Workspace(t, nil))
			_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "say hello slowly"))
			a.WaitNote(func(m acptest.Msg) bool { return strings.Contains(string(m.Params), "How can I") })
			start := time.Now()
			a.Notify("session/cancel", map[string]string{"sessionId": sid})
			res, rerr := a.Wait(answer)
			if rerr != nil || !strings.Contains(string(res), `"cancelled"`) {
				t.Fatalf("cancelled prompt answered %s %v", res, rerr)
			}
			select {
			case <-srv.ClientGone():
			case <-time.After(10 * time.Second):
				t.Fatal("the provider's connection was not closed on cancel")
			}
			t.Logf("cancel answered and the stream closed within %v", time.Since(start))
			interrupted := eventsOf(acptest.Log(t, a.DB, sid), "interrupted")
			if len(interrupted) != 1 || interrupted[0]["text"] != partial {
				t.Fatalf("interrupted events = %v, want the partial text kept", interrupted)
			}
		})
	}
}

func TestProviderRetriesOverloadedThenAnswers(t *testing.T) {
	for _, f := range fakes(t) {
		t.Run(f.name, func(t *testing.T) {
			srv := providertest.NewServer(t, f.overloaded, f.overloadedAgain, providertest.Reply{Body: f.text})
			a := acptest.Start(t, acptest.Options{Model: f.model, Env: isolated(t, f.env(srv.URL)...)})
			a.Initialize()
			sid := a.NewSession(acptest.Workspace(t, nil))
			if stop := a.Prompt(sid, "hello"); stop != "end_turn" {
				t.Fatalf("stopReason = %q; stderr:\n%s", stop, a.Stderr())
			}
			if n := len(srv.Requests()); n != 3 {
				t.Fatalf("provider got %d requests, want 3", n)
			}
			errs := eventsOf(acptest.Log(t, a.DB, sid), "provider_error")
			if len(errs) != 2 {
				t.Fatalf("provider_error events = %v, want one per failed attempt", errs)
			}
			for i, e := range errs {
				if e["attempt"] != float64(i+1) || e["final"] == true || e["retryable"] != true || !strings.HasPrefix(e["message"].(string), f.name) {
					t.Errorf("provider_error %d = %v", i, e)
				}
			}
			text := strings.Join(acptest.Transcript(a.Updates(sid)), "\n")
			if !strings.Contains(text, "agent_message_chunk: Hello! How can I help") {
				t.Errorf("answer after the retries not streamed:\n%s", text)
			}
		})
	}
}

func TestProviderDisconnectMidStream(t *testing.T) {
	for _, f := range fakes(t)[:2] {
		t.Run(f.name, func(t *testing.T) {
			cut := 5
			partial := "Hello! How can I help"
			if f.name != "anthropic" {
				cut, partial = 3, "Hello! How can I"
			}
			srv := providertest.NewServer(t, providertest.Reply{Body: f.text, CutAfter: cut}, providertest.Reply{Body: f.text})
			a := acptest.Start(t, acptest.Options{Model: f.model, Env: isolated(t, f.env(srv.URL)...)})
			a.Initialize()
			sid := a.NewSession(acptest.Workspace(t, nil))
			_, rerr := a.Call("session/prompt", acptest.PromptParams(sid, "hello"))
			if rerr == nil || !strings.Contains(rerr.Message, f.name) || !strings.Contains(rerr.Message, "kept") {
				t.Fatalf("prompt error = %v; want one naming %s and saying the partial text is kept", rerr, f.name)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests: a stream that already produced text must not be retried", n)
			}
			events := acptest.Log(t, a.DB, sid)
			interrupted := eventsOf(events, "interrupted")
			if len(interrupted) != 1 || interrupted[0]["text"] != partial {
				t.Errorf("interrupted = %v, want the partial text %q", interrupted, partial)
			}
			errs := eventsOf(events, "provider_error")
			if len(errs) != 1 || errs[0]["final"] != true || errs[0]["kind"] != "network" {
				t.Errorf("provider_error = %v", errs)
			}
			// The session stays usable.
			if stop := a.Prompt(sid, "again"); stop != "end_turn" {
				t.Errorf("prompt after the disconnect: %q", stop)
			}
		})
	}
}

// TestPinnedModelSurvivesRestart: a session keeps the model it was created
// with after bridle restarts with another BRIDLE_MODEL, until the editor
// changes it explicitly, which is logged.
func TestPinnedModelSurvivesRestart(t *testing.T) {
	anth := providertest.NewServer(t, providertest.Reply{Body: recorded(t, "anthropic/text.sse")})
	oai := providertest.NewServer(t, providertest.Reply{Body: recorded(t, "openai/text.sse")})
	env := isolated(t, "ANTHROPIC_API_KEY=k1", "ANTHROPIC_BASE_URL="+anth.URL, "OPENAI_API_KEY=k2", "OPENAI_BASE_URL="+oai.URL+"/v1")
	db := t.TempDir() + "/bridle.db"
	ws := acptest.Workspace(t, nil)

	a := acptest.Start(t, acptest.Options{DB: db, Model: "anthropic/claude-sonnet-4-5", Env: env})
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "first"); stop != "end_turn" {
		t.Fatalf("first prompt: %q", stop)
	}
	if code := a.CloseStdin(); code != 0 {
		t.Fatalf("bridle exited %d", code)
	}

	b := acptest.Start(t, acptest.Options{DB: db, Model: "openai/gpt-4.1", Env: env})
	b.Initialize()
	var loaded struct {
		ConfigOptions []struct {
			ID           string `json:"id"`
			CurrentValue string `json:"currentValue"`
		} `json:"configOptions"`
	}
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, &loaded)
	var current string
	for _, o := range loaded.ConfigOptions {
		if o.ID == "model" {
			current = o.CurrentValue
		}
	}
	if current != "anthropic/claude-sonnet-4-5" {
		t.Errorf("model option after restart = %q, want the pinned anthropic/claude-sonnet-4-5", current)
	}
	if stop := b.Prompt(sid, "second"); stop != "end_turn" {
		t.Fatalf("second prompt: %q; stderr:\n%s", stop, b.Stderr())
	}
	if n, m := len(anth.Requests()), len(oai.Requests()); n != 2 || m != 0 {
		t.Fatalf("after restart: %d requests to anthropic, %d to openai; want 2 and 0", n, m)
	}

	// An explicit change through ACP is honoured and logged.
	b.MustCall("session/set_config_option", map[string]any{"sessionId": sid, "configId": "model", "value": "openai/gpt-4.1"}, nil)
	if stop := b.Prompt(sid, "third"); stop != "end_turn" {
		t.Fatalf("third prompt: %q", stop)
	}
	if m := oai.Requests(); len(m) != 1 || !strings.Contains(string(m[0].Body), `"model":"gpt-4.1"`) {
		t.Fatalf("the changed model was not used: %d requests to openai", len(m))
	}
	changed := eventsOf(acptest.Log(t, db, sid), "model_changed")
	if len(changed) != 1 || changed[0]["from"] != "anthropic/claude-sonnet-4-5" || changed[0]["to"] != "openai/gpt-4.1" {
		t.Errorf("model_changed events = %v", changed)
	}
	if _, rerr := b.Call("session/set_config_option", map[string]any{"sessionId": sid, "configId": "model", "value": "nonsense"}); rerr == nil || rerr.Code != -32602 {
		t.Errorf("a malformed model was accepted: %v", rerr)
	}
	b.AssertValid(t)
}

// TestNoProviderConfigured: initialize says what to set, and a prompt
// fails with ACP's auth-required error saying it too, at once.
func TestNoProviderConfigured(t *testing.T) {
	a := acptest.Start(t, acptest.Options{Env: isolated(t)})
	var init struct {
		AuthMethods []struct {
			ID          string `json:"id"`
			Description string `json:"description"`
		} `json:"authMethods"`
	}
	if err := json.Unmarshal(a.Initialize(), &init); err != nil {
		t.Fatal(err)
	}
	if len(init.AuthMethods) != 1 || !strings.Contains(init.AuthMethods[0].Description, "ANTHROPIC_API_KEY") {
		t.Fatalf("authMethods = %+v, want one explaining what to set", init.AuthMethods)
	}
	sid := a.NewSession(acptest.Workspace(t, nil))
	_, rerr := a.Call("session/prompt", acptest.PromptParams(sid, "hello"))
	if rerr == nil || rerr.Code != -32000 {
		t.Fatalf("prompt error = %v, want -32000", rerr)
	}
	for _, want := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "BRIDLE_MODEL", "ollama"} {
		if !strings.Contains(rerr.Message, want) {
			t.Errorf("error %q does not mention %s", rerr.Message, want)
		}
	}
	a.AssertValid(t)
}

// TestRunPrintsTheAnswer: `bridle run` streams the answer to stdout.
func TestRunPrintsTheAnswer(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Body: recorded(t, "anthropic/text.sse")})
	cmd := exec.Command(acptest.Binary(t), "run", "--db", t.TempDir()+"/b.db", "--cwd", acptest.Workspace(t, nil), "--model", "anthropic/claude-haiku-4-5", "say hello")
	cmd.Env = append(os.Environ(), isolated(t, "ANTHROPIC_API_KEY=k", "ANTHROPIC_BASE_URL="+srv.URL, "BRIDLE_MODEL=openai/gpt-4.1")...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bridle run: %v\n%s", err, stderr.String())
	}
	if string(out) != "Hello! How can I help you today?\n" {
		t.Errorf("stdout = %q", out)
	}
	if body := string(srv.Requests()[0].Body); !strings.Contains(body, `"model":"claude-haiku-4-5"`) || !strings.Contains(body, "say hello") {
		t.Errorf("request = %s", body)
	}

	// Unconfigured: a clear message and a failing exit code.
	cmd = exec.Command(acptest.Binary(t), "run", "--db", t.TempDir()+"/c.db", "hello")
	cmd.Env = append(os.Environ(), isolated(t, "BRIDLE_MODEL=")...)
	msg, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "ANTHROPIC_API_KEY") {
		t.Errorf("unconfigured run: %v %s", err, msg)
	}
}
