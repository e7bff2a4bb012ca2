package e2e

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// controlSequences are what a hostile repository has the model write into
// the labels an editor shows, and what would reach the editor of each.
var controlSequences = []struct{ name, seq, mark string }{
	{"ESC (CSI: clear the screen)", "\x1b[2J", "\x1b["},
	{"OSC (set the terminal's title)", "\x1b]0;PWNED\x07", "\x1b]"},
	{"BEL", "\x07", "\x07"},
	{"CR (write over the line)", "\r", "\r"},
	{"NUL", "\x00", "\x00"},
	{"U+202E (right-to-left override)", "\u202e", "\u202e"},
}

// labelPlaces are the labels the issue names; bodyPlaces the message
// bodies, filtered too (their lines kept).
var (
	labelPlaces = []string{"session title", "tool-call title", "permission", "plan step"}
	bodyPlaces  = []string{"answer", "command output"}
)

// shown sorts what bridle sent the editor (a connection's messages) by
// the place the editor shows it in.
func shown(t *testing.T, sent []acptest.Sent, into map[string][]string) {
	t.Helper()
	for _, s := range sent {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Update map[string]any `json:"update"`
				acpPermission
			} `json:"params"`
			Result struct {
				Sessions []struct {
					Title string `json:"title"`
				} `json:"sessions"`
			} `json:"result"`
		}
		if err := json.Unmarshal(s.Raw, &m); err != nil {
			t.Fatalf("bridle sent %s: %v", s.Raw, err)
		}
		for _, ses := range m.Result.Sessions {
			into["session title"] = append(into["session title"], ses.Title)
		}
		switch m.Method {
		case "session/request_permission":
			into["permission"] = append(into["permission"], m.Params.ToolCall.Title)
			for _, o := range m.Params.Options {
				into["permission"] = append(into["permission"], o.Name)
			}
			continue
		case "session/update":
		default:
			continue
		}
		u := m.Params.Update
		str := func(v any) string { s, _ := v.(string); return s }
		switch u["sessionUpdate"] {
		case "session_info_update":
			into["session title"] = append(into["session title"], str(u["title"]))
		case "tool_call", "tool_call_update":
			into["tool-call title"] = append(into["tool-call title"], str(u["title"]))
			content, _ := u["content"].([]any)
			for _, c := range content {
				inner, _ := c.(map[string]any)["content"].(map[string]any)
				into["command output"] = append(into["command output"], str(inner["text"]))
			}
		case "plan":
			entries, _ := u["entries"].([]any)
			for _, e := range entries {
				into["plan step"] = append(into["plan step"], str(e.(map[string]any)["content"]))
			}
		case "agent_message_chunk":
			c, _ := u["content"].(map[string]any)
			into["answer"] = append(into["answer"], str(c["text"]))
		}
	}
}

type acpPermission struct {
	ToolCall struct {
		Title string `json:"title"`
	} `json:"toolCall"`
	Options []struct {
		Name string `json:"name"`
	} `json:"options"`
}

// TestControlCharactersNeverReachTheEditor: six control sequences, put by
// the model (and the user's first prompt) into a session's title, a tool
// call's title (a command's description, a tool name that is none), a
// permission question and a plan step, and into an answer and a command's
// output, reach the editor in none of them, live, on session/load or in
// session/list; the words around them do, and a body keeps its lines.
func TestControlCharactersNeverReachTheEditor(t *testing.T) {
	var all, noNUL strings.Builder
	for _, c := range controlSequences {
		fmt.Fprintf(&all, "%s<%s>", c.seq, strings.Fields(c.name)[0])
		if c.seq != "\x00" {
			fmt.Fprintf(&noNUL, "%s<%s>", c.seq, strings.Fields(c.name)[0])
		}
	}
	label := "tidy " + all.String() + " up"
	// The command carries them too, in a comment (a NUL cannot be in a
	// command line), so the question's options name them; its output
	// carries them as bytes.
	command := `printf 'line one \033[2J\033]0;PWNED\007\007\r\000\342\200\256\nline two\n' # ` + noNUL.String()
	scenario, _ := json.Marshal(map[string]any{"turns": []any{map[string]any{"match": "tidy", "calls": []any{
		map[string]any{"tool_calls": []any{map[string]any{"name": "plan", "input": map[string]any{"entries": []any{
			map[string]any{"content": label, "status": "in_progress"}}}}}},
		map[string]any{"tool_calls": []any{map[string]any{"name": "run_command", "input": map[string]any{"command": command, "description": label}}}},
		map[string]any{"tool_calls": []any{map[string]any{"name": "no_such_tool" + all.String(), "input": map[string]any{}}}},
		map[string]any{"text": "answer " + all.String() + "\nsecond line"},
	}}}})
	ws := acptest.Workspace(t, map[string]string{"notes.txt": "notes\n"})
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, string(scenario))})
	var mu sync.Mutex
	asked := 0
	a.OnRequest = func(m acptest.Msg) (any, *acptest.RPCError) {
		mu.Lock()
		asked++
		mu.Unlock()
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow_once"}}, nil
	}
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, label+"\nand more"); stop != "end_turn" {
		t.Fatalf("the prompt ended %s", stop)
	}
	a.MustCall("session/list", map[string]any{}, nil)
	a.CloseStdin()
	mu.Lock()
	if asked != 1 {
		t.Fatalf("bridle asked %d questions, want 1 (the command)", asked)
	}
	mu.Unlock()

	// Loaded again, by another bridle: the replay and the list.
	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: acptest.Scenario(t, string(scenario))})
	b.Initialize()
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	b.MustCall("session/list", map[string]any{}, nil)
	b.CloseStdin()

	places := map[string][]string{}
	shown(t, append(a.Sent(), b.Sent()...), places)
	for _, p := range append(append([]string{}, labelPlaces...), bodyPlaces...) {
		if len(places[p]) == 0 {
			t.Fatalf("the editor was shown no %s", p)
		}
	}
	count := func(names []string) (tried int, reached []string) {
		for _, p := range names {
			text := strings.Join(places[p], "\n")
			for _, c := range controlSequences {
				tried++
				if strings.Contains(text, c.mark) {
					reached = append(reached, c.name+" in the "+p)
				}
			}
		}
		sort.Strings(reached)
		return tried, reached
	}
	for _, set := range []struct {
		what  string
		names []string
	}{{"labels", labelPlaces}, {"bodies", bodyPlaces}} {
		tried, reached := count(set.names)
		t.Logf("%s: %d control sequences × places tried, %d reached the editor", set.what, tried, len(reached))
		if len(reached) > 0 {
			t.Errorf("%d of %d reached the editor in its %s:\n%s", len(reached), tried, set.what, strings.Join(reached, "\n"))
		}
	}
	// What was around them is still shown: labels on one line, bodies
	// with their lines.
	for p, want := range map[string]string{
		"session title": "tidy ", "tool-call title": "no_such_tool", "permission": "tidy ", "plan step": "up",
		"answer": "\nsecond line", "command output": "line one",
	} {
		if text := strings.Join(places[p], "\x00"); !strings.Contains(text, want) {
			t.Errorf("the %s lost its words: %q, want %q in it", p, places[p], want)
		}
	}
	for _, p := range labelPlaces {
		for _, s := range places[p] {
			if strings.ContainsAny(s, "\n\t") {
				t.Errorf("a %s spans lines: %q", p, s)
			}
		}
	}
	if out := strings.Join(places["command output"], "\x00"); !strings.Contains(out, "line two") {
		t.Errorf("the command's output lost its second line: %q", places["command output"])
	}
}
