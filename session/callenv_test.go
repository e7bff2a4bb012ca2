package session

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/tools"
)

// envSpy is an edit tool that notes the Env of each of its uses.
type envSpy struct {
	mu   *sync.Mutex
	seen *[]string
	envs *[]*tools.Env
}

func (envSpy) Name() string        { return "spy_edit" }
func (envSpy) Description() string { return "Edits nothing." }
func (envSpy) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object"}`)
}
func (envSpy) Kind() tools.Kind          { return tools.KindEdit }
func (envSpy) Effect() permission.Effect { return permission.EffectNone }
func (s envSpy) note(use string, env *tools.Env) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.seen = append(*s.seen, use)
	*s.envs = append(*s.envs, env)
}
func (s envSpy) Preview(_ context.Context, env *tools.Env, _ json.RawMessage) (tools.Preview, error) {
	s.note("preview", env)
	return tools.Preview{Title: "spy"}, nil
}
func (s envSpy) Plan(_ context.Context, env *tools.Env, _ json.RawMessage) (tools.FileEdit, error) {
	s.note("plan", env)
	return tools.FileEdit{}, nil
}
func (s envSpy) Run(_ context.Context, env *tools.Env, _ json.RawMessage) tools.Result {
	s.note("run", env)
	return tools.Result{Output: "done"}
}

// TestCallSharesOneEnv: the live card of a call, its preview, its plan and
// its run get the same Env, so an edit is planned (read, diffed, redacted)
// once per call; the next call gets another.
func TestCallSharesOneEnv(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []string
		envs []*tools.Env
	)
	spy := envSpy{mu: &mu, seen: &seen, envs: &envs}
	sc := &scripted.Scenario{Turns: []scripted.Turn{{Match: "go", Calls: []scripted.Call{
		call("spy_edit", `{}`),
		call("spy_edit", `{}`),
		{Text: scripted.Chunks{"Done."}},
	}}}}
	s := toolSession(t, sc, t.TempDir(), spy)
	if stop, err := prompt(t, s, "go"); err != nil || stop != StopEndTurn {
		t.Fatalf("prompt: %v %v", stop, err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The live card's preview may come before or after the plan: the
	// card is sent when the call's events are committed. Each call is
	// previewed twice (the check, the card), planned once, run once.
	want := []string{"plan", "preview", "preview", "run"}
	if len(seen) != 2*len(want) {
		t.Fatalf("uses = %v, want %v twice", seen, want)
	}
	for c := range 2 {
		uses := slices.Clone(seen[c*len(want) : (c+1)*len(want)])
		if uses[len(uses)-1] != "run" {
			t.Fatalf("uses = %v: call %d ran before its preview or plan", seen, c+1)
		}
		slices.Sort(uses)
		if !slices.Equal(uses, want) {
			t.Fatalf("uses = %v, want each call's to be %v in some order", seen, want)
		}
		// The card's preview gets a copy that does not wait for commands
		// (Env.WithoutWaiting, which shares the call's memo: sandbox's
		// TestWithoutWaitingSharesThePlan); every other use the Env itself.
		var own *tools.Env
		for i, use := range seen[c*len(want) : (c+1)*len(want)] {
			env := envs[c*len(want)+i]
			if use != "preview" {
				if own == nil {
					own = env
				}
				if env != own {
					t.Errorf("call %d: its %s got another Env than its plan", c+1, use)
				}
			}
			if env.Key != envs[c*len(want)].Key {
				t.Errorf("call %d: its %s got the Env of call %s", c+1, use, env.Key)
			}
		}
	}
	if envs[0].Key == envs[len(want)].Key {
		t.Error("two calls shared an Env")
	}
	s.callsMu.Lock()
	defer s.callsMu.Unlock()
	if len(s.calls) != 0 {
		t.Errorf("%d call Envs kept after the turn", len(s.calls))
	}
}

// TestCallEnvFollowsTheRedactor: a call's Env is kept while the session's
// redactor stands; once a new one takes its place (a .env file made by an
// earlier call, or while the call waited for approval), the call gets a
// new Env with it, which keeps the call's hooks.
func TestCallEnvFollowsTheRedactor(t *testing.T) {
	s := toolSession(t, &scripted.Scenario{}, t.TempDir())
	first := s.callEnv("k")
	first.Waiting = func(string) {}
	if again := s.callEnv("k"); again != first {
		t.Fatal("the same call got another Env while the redactor stood")
	}
	s.addSecrets([][2]string{{"value-Vn38Qp2L", "test"}})
	next := s.callEnv("k")
	if next == first {
		t.Fatal("the call kept the Env of the former redactor")
	}
	if next.Redactor != s.redactor() {
		t.Error("the call's new Env does not have the session's redactor")
	}
	if next.Waiting == nil {
		t.Error("the call's new Env lost its Waiting hook")
	}
	if got := next.Redactor.Redact("x value-Vn38Qp2L"); strings.Contains(got, "value-Vn38Qp2L") {
		t.Errorf("the new Env's redactor does not know the value added: %q", got)
	}
	if s.callEnv("k") != next {
		t.Error("the new Env is not kept")
	}
}
