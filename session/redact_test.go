package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/tools"
)

// TestPromptSecretsRedactedBeforeTheyAreStored: the values of bridle's
// secret-named variables and of the workspace's .env files, and pasted
// tokens, are out of the prompt before it is logged, titled, sent or
// pinned, and the user is told, live and on replay.
func TestPromptSecretsRedactedBeforeTheyAreStored(t *testing.T) {
	envValue := "envprompt-" + "Xq82LmZ4"
	dotValue := "dotprompt-" + "Vb8Kx3Lq"
	token := "ghp_" + strings.Repeat("Tk5", 12)
	t.Setenv("MY_SERVICE_TOKEN", envValue)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "services", "api"), 0o755)
	os.WriteFile(filepath.Join(dir, "services", "api", ".env.local"), []byte("DB_PASS="+dotValue+"\n"), 0o644)
	m, rec := newTestManager(t, &scripted.Scenario{Turns: []scripted.Turn{{Calls: []scripted.Call{{Text: scripted.Chunks{"Noted."}}}}}})
	info, err := m.New(context.Background(), NewParams{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Get(context.Background(), info.ID)
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{envValue, dotValue, token}
	content := []event.Content{
		{Type: "text", Text: "use " + envValue + " and " + dotValue + "\nand " + token + "; DB_PASSWORD=hunter2hunter2 is an example"},
		{Type: "resource", URI: "file:///x/config.yaml", Text: "api_secret = a1b2c3d4e5f6g7h8\n"},
	}
	if _, err := s.Prompt(context.Background(), content); err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(t, s, "/constraint never print "+envValue); err != nil {
		t.Fatal(err)
	}

	logged, _ := json.Marshal(s.Events())
	for _, sec := range append(secrets, "a1b2c3d4e5f6g7h8") {
		if strings.Contains(string(logged), sec) {
			t.Errorf("the log holds %q", sec)
		}
		if strings.Contains(s.Info().Title, sec) {
			t.Errorf("the title %q holds %q", s.Info().Title, sec)
		}
	}
	if !strings.Contains(string(logged), "DB_PASSWORD=hunter2hunter2") {
		t.Errorf("the user's example was redacted: %s", logged)
	}
	var um event.UserMessage
	var pin event.ConstraintPinned
	for _, e := range s.Events() {
		switch v := e.Payload.(type) {
		case event.UserMessage:
			um = v
		case event.ConstraintPinned:
			pin = v
		}
	}
	if want := "env:MY_SERVICE_TOKEN,services/api/.env.local:DB_PASS,github-token,assignment"; strings.Join(um.Redacted, ",") != want {
		t.Errorf("user_message redacted %q, want %s", um.Redacted, want)
	}
	if !strings.HasPrefix(s.Info().Title, "use [REDACTED:env:MY_SERVICE_TOKEN] and [REDACTED:") {
		t.Errorf("title %q", s.Info().Title)
	}
	if pin.Text != "never print [REDACTED:env:MY_SERVICE_TOKEN]" || len(pin.Redacted) != 1 {
		t.Errorf("pin %+v", pin)
	}

	note := "[bridle: 4 secrets in your prompt were redacted before they were stored or sent to the model: env:MY_SERVICE_TOKEN, services/api/.env.local:DB_PASS, github-token, assignment]\n\n"
	pinNote := "[bridle: 1 secret in your prompt was redacted before it was stored or sent to the model: env:MY_SERVICE_TOKEN]\n\n"
	live := texts(rec, func(u acp.SessionUpdate) *acp.ContentChunk { return u.AgentMessageChunk })
	if len(live) < 3 || live[0] != note || live[1] != "Noted." || live[2] != pinNote {
		t.Errorf("live agent text %q", live)
	}
	rec.mu.Lock()
	rec.updates = nil
	rec.mu.Unlock()
	if err := s.Replay(context.Background()); err != nil {
		t.Fatal(err)
	}
	replay := texts(rec, func(u acp.SessionUpdate) *acp.ContentChunk { return u.AgentMessageChunk })
	if len(replay) < 3 || replay[0] != note || replay[2] != pinNote {
		t.Errorf("replayed agent text %q", replay)
	}
	for _, u := range texts(rec, func(u acp.SessionUpdate) *acp.ContentChunk { return u.UserMessageChunk }) {
		for _, sec := range secrets {
			if strings.Contains(u, sec) {
				t.Errorf("the replayed prompt holds %q", sec)
			}
		}
	}
}

// texts is the text of the updates' chunks of one kind.
func texts(r *recorder, kind func(acp.SessionUpdate) *acp.ContentChunk) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, u := range r.updates {
		if c := kind(u); c != nil {
			out = append(out, TextOf(c))
		}
	}
	return out
}

// vouch is a read tool that fails with a text quoting its input's note;
// it says the text is redacted when its input says so.
type vouch struct{}

func (vouch) Name() string        { return "vouch" }
func (vouch) Description() string { return "Fail, quoting the note." }
func (vouch) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"vouched":{"type":"boolean"},"note":{"type":"string"}}}`)
}
func (vouch) Kind() tools.Kind          { return tools.KindRead }
func (vouch) Effect() permission.Effect { return permission.EffectRead }
func (vouch) Preview(context.Context, *tools.Env, json.RawMessage) (tools.Preview, error) {
	return tools.Preview{Title: "vouch"}, nil
}
func (vouch) Run(_ context.Context, _ *tools.Env, input json.RawMessage) tools.Result {
	var in struct {
		Vouched bool
		Note    string
	}
	json.Unmarshal(input, &in)
	return tools.Result{Output: "failed on " + in.Note, IsError: true, Redacted: in.Vouched}
}

// TestCallTextsAreRedactedOnce: a call's input is redacted once, as its
// assistant message is recorded, and tool_started and the live card take
// it from there; an error result is redacted by the session unless the
// tool says it did (tools.Result.Redacted), in which case it is
// recorded as the tool made it.
func TestCallTextsAreRedactedOnce(t *testing.T) {
	token := "ghp_" + strings.Repeat("Vc7", 12)
	sc := &scripted.Scenario{Turns: []scripted.Turn{{Calls: []scripted.Call{
		call("vouch", `{"vouched": false, "note": "`+token+`"}`),
		call("vouch", `{"vouched": true, "note": "`+token+`"}`),
		{Text: scripted.Chunks{"Done."}},
	}}}}
	m, rec := newTestManager(t, sc)
	m.cfg.Tools = []tools.Tool{vouch{}}
	info, err := m.New(context.Background(), NewParams{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.Get(context.Background(), info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prompt(t, s, "go"); err != nil {
		t.Fatal(err)
	}
	var calls []event.ToolCall
	var started []event.ToolStarted
	var results []string
	for _, e := range s.Events() {
		switch v := e.Payload.(type) {
		case event.AssistantMessage:
			calls = append(calls, v.ToolCalls...)
		case event.ToolStarted:
			started = append(started, v)
		case event.ToolResult:
			results = append(results, v.Output)
		}
	}
	if len(calls) != 2 || len(started) != 2 || len(results) != 2 {
		t.Fatalf("%d calls, %d started, %d results; want 2 each", len(calls), len(started), len(results))
	}
	var cards []string
	rec.mu.Lock()
	for _, u := range rec.updates {
		if u.ToolCall != nil {
			cards = append(cards, string(u.ToolCall.RawInput))
		}
	}
	rec.mu.Unlock()
	for i, c := range calls {
		if !c.Redacted || strings.Contains(string(c.Input), token) || !strings.Contains(string(c.Input), "[REDACTED:github-token]") {
			t.Errorf("call %d recorded as %s (redacted %v)", i, c.Input, c.Redacted)
		}
		if string(started[i].Input) != string(c.Input) || !started[i].Redacted {
			t.Errorf("tool_started %d keeps %s (redacted %v), its call %s", i, started[i].Input, started[i].Redacted, c.Input)
		}
		if i >= len(cards) || cards[i] != string(c.Input) {
			t.Errorf("the live cards show %q; call %d is %s", cards, i, c.Input)
		}
	}
	if want := "failed on [REDACTED:github-token]"; results[0] != want {
		t.Errorf("the result the tool did not redact is %q, want %q", results[0], want)
	}
	if want := "failed on " + token; results[1] != want {
		t.Errorf("the result the tool says it redacted is %q, want it as the tool made it, %q", results[1], want)
	}
}
