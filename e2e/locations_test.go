package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/internal/acptest"
)

// sentPaths returns, per tool call id, the paths bridle gave the editor
// for it: its locations and its diffs' files, in updates and questions.
func sentPaths(t *testing.T, sent []acptest.Sent) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, s := range sent {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Update   *callPaths `json:"update"`
				ToolCall *callPaths `json:"toolCall"`
			} `json:"params"`
		}
		if err := json.Unmarshal(s.Raw, &m); err != nil {
			t.Fatalf("bridle sent %s: %v", s.Raw, err)
		}
		for _, c := range []*callPaths{m.Params.Update, m.Params.ToolCall} {
			if c == nil || c.ToolCallID == "" {
				continue
			}
			for _, l := range c.Locations {
				out[c.ToolCallID] = append(out[c.ToolCallID], l.Path)
			}
			var content []struct {
				Type string `json:"type"`
				Path string `json:"path"`
			}
			json.Unmarshal(c.Content, &content) // an array on a tool call; a chunk's is an object
			for _, d := range content {
				if d.Type == "diff" {
					out[c.ToolCallID] = append(out[c.ToolCallID], d.Path)
				}
			}
		}
	}
	return out
}

type callPaths struct {
	ToolCallID string `json:"toolCallId"`
	Locations  []struct {
		Path string `json:"path"`
	} `json:"locations"`
	Content json.RawMessage `json:"content"`
}

// TestLocationsStayInTheWorkspace: tool calls that name paths outside the
// workspace, through a link out, or hidden (an SSH key, bridle's own
// database), refused whichever way (by the confinement, by the mode, by
// the user, as an unknown tool, for bad input), give the editor no
// location or diff naming them, live or on session/load; a call on an
// ordinary file still gets its absolute location.
func TestLocationsStayInTheWorkspace(t *testing.T) {
	home, _ := hiddenHome(t)
	outside := acptest.Workspace(t, map[string]string{"secret.txt": "outside\n"})
	if err := os.Symlink(outside, filepath.Join(home, "link-out")); err != nil {
		t.Fatal(err)
	}
	up, _ := filepath.Rel(home, filepath.Join(outside, "secret.txt"))
	call := func(name string, input map[string]any) map[string]any {
		return map[string]any{"tool_calls": []any{map[string]any{"name": name, "input": input}}}
	}
	forbidden := []map[string]any{
		// Refused by the confinement, in every mode.
		call("read_file", map[string]any{"path": ".ssh/id_ed25519"}),
		call("read_file", map[string]any{"path": ".local/share/bridle/bridle.db"}),
		call("read_file", map[string]any{"path": up}),
		call("read_file", map[string]any{"path": filepath.Join(outside, "secret.txt")}),
		call("read_file", map[string]any{"path": "link-out/secret.txt"}),
		call("read_file", map[string]any{"path": "/etc/passwd"}),
		call("list_dir", map[string]any{"path": ".ssh"}),
		call("list_dir", map[string]any{"path": outside}),
		call("grep", map[string]any{"pattern": "x", "path": ".local/share/bridle"}),
		call("glob", map[string]any{"pattern": "*", "path": "link-out"}),
		// Not in read-only mode.
		call("edit_file", map[string]any{"path": up, "old_string": "outside", "new_string": "in"}),
		call("write_file", map[string]any{"path": filepath.Join(outside, "new.txt"), "content": "x"}),
		call("run_command", map[string]any{"command": "ls", "workdir": ".ssh"}),
		// No such tool, and input the tool refuses.
		call("exfiltrate", map[string]any{"path": ".ssh/id_ed25519"}),
		call("read_file", map[string]any{"path": "/etc/passwd", "offset": "first"}),
	}
	asked := []map[string]any{
		// The user is asked (and says no): the question is shown too.
		call("edit_file", map[string]any{"path": up, "old_string": "outside", "new_string": "in"}),
		call("edit_file", map[string]any{"path": "link-out/secret.txt", "old_string": "outside", "new_string": "in"}),
	}
	scenario, _ := json.Marshal(map[string]any{"turns": []any{
		map[string]any{"match": "LOOK", "calls": append(append(forbidden, call("read_file", map[string]any{"path": "notes.txt"})), map[string]any{"text": "looked"})},
		map[string]any{"match": "CHANGE", "calls": append(asked, map[string]any{"text": "changed"})},
	}})
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, string(scenario)), DefaultDB: true, Home: home})
	var questions atomic.Int32
	a.OnRequest = func(m acptest.Msg) (any, *acptest.RPCError) {
		questions.Add(1)
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "reject_once"}}, nil
	}
	a.Initialize()
	sid := a.NewSession(home)
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "read-only"}, nil)
	if stop := a.Prompt(sid, "LOOK around"); stop != "end_turn" {
		t.Fatalf("LOOK: %s", stop)
	}
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "ask"}, nil)
	if stop := a.Prompt(sid, "CHANGE things"); stop != "end_turn" {
		t.Fatalf("CHANGE: %s", stop)
	}
	a.CloseStdin()
	if questions.Load() == 0 {
		t.Fatal("bridle asked nothing: the question's card was not tried")
	}
	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: acptest.Scenario(t, string(scenario)), Home: home})
	b.Initialize()
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": home, "mcpServers": []any{}}, nil)
	b.CloseStdin()

	// The calls by id, in order: every result names its call.
	var ids []string
	for _, r := range results(t, a.DB, sid) {
		ids = append(ids, r["key"].(string))
	}
	if len(ids) != len(forbidden)+1+len(asked) {
		t.Fatalf("%d tool results, want %d", len(ids), len(forbidden)+1+len(asked))
	}
	paths := sentPaths(t, append(a.Sent(), b.Sent()...))
	byKey := map[string][]string{}
	for _, k := range ids {
		byKey[k] = paths[event.ToolCallID(k)]
	}
	bad := func(p string) bool {
		if !filepath.IsAbs(p) {
			return true
		}
		for _, h := range []string{".ssh", ".local", ".config", "link-out"} {
			if p == filepath.Join(home, h) || strings.HasPrefix(p, filepath.Join(home, h)+"/") {
				return true
			}
		}
		return p != home && !strings.HasPrefix(p, home+"/")
	}
	var leaked []string
	tried := 0
	for i, k := range ids {
		if i == len(forbidden) {
			if want := filepath.Join(home, "notes.txt"); !slices.Contains(byKey[k], want) {
				t.Errorf("read_file notes.txt: locations %q, want %s", byKey[k], want)
			}
			continue
		}
		tried++
		for _, p := range byKey[k] {
			if bad(p) {
				leaked = append(leaked, p)
				break
			}
		}
	}
	sort.Strings(leaked)
	t.Logf("%d refused calls tried, %d gave the editor a location or diff outside the workspace or hidden", tried, len(leaked))
	if len(leaked) > 0 {
		t.Errorf("%d of %d refused calls named to the editor:\n%s", len(leaked), tried, strings.Join(leaked, "\n"))
	}
}

// TestAFileSwappedForALinkOutIsLocatedNoMore: a file read in one prompt
// gets its location; swapped for a link out of the workspace, it gets
// none when the session is loaded again, in the same process (which
// located it before) and in another, and a read in the same session
// after the swap is refused a location too. A replay locates each path
// once (one replay's Locator), never from an answer an earlier one kept.
func TestAFileSwappedForALinkOutIsLocatedNoMore(t *testing.T) {
	outside := acptest.Workspace(t, map[string]string{"secret.txt": "outside\n"})
	ws := acptest.Workspace(t, map[string]string{"notes.txt": "notes\n"})
	notes := filepath.Join(ws, "notes.txt")
	read := `{"tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]}`
	scenario := `{"turns": [
		{"match": "FIRST", "calls": [` + read + `, {"text": "read"}]},
		{"match": "AGAIN", "calls": [` + read + `, {"text": "read again"}]}
	]}`
	model := acptest.Scenario(t, scenario)
	a := acptest.Start(t, acptest.Options{Model: model})
	a.Initialize()
	sid := a.NewSession(ws)
	if stop := a.Prompt(sid, "FIRST read"); stop != "end_turn" {
		t.Fatalf("FIRST: %s", stop)
	}
	located := func(sent []acptest.Sent) int {
		n := 0
		for _, ps := range sentPaths(t, sent) {
			for _, p := range ps {
				if p == notes {
					n++
				}
			}
		}
		return n
	}
	if n := located(a.Sent()); n == 0 {
		t.Fatalf("the first read gave the editor no location for %s", notes)
	}
	before := len(a.Sent())

	if err := os.Remove(notes); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), notes); err != nil {
		t.Fatal(err)
	}
	a.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	if stop := a.Prompt(sid, "AGAIN read"); stop != "end_turn" {
		t.Fatalf("AGAIN: %s", stop)
	}
	a.CloseStdin()
	cards := 0
	for _, m := range a.Sent()[before:] {
		if strings.Contains(string(m.Raw), `"sessionUpdate":"tool_call"`) {
			cards++
		}
	}
	if cards < 2 {
		t.Fatalf("after the swap, the same process sent %d tool call cards, want the first read's replayed and the second's", cards)
	}
	if n := located(a.Sent()[before:]); n != 0 {
		t.Errorf("after the swap, the same process gave the editor %s %d times (the replay of session/load, or the new read)", notes, n)
	}

	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model})
	b.Initialize()
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	b.CloseStdin()
	if n := located(b.Sent()); n != 0 {
		t.Errorf("after the swap, another process's replay gave the editor %s %d times", notes, n)
	}
}
