package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// TestRewindCancelledWhilePlanning: a /rewind cancelled (session/cancel)
// while it reads the files it would put back, here through an editor that
// is slow to answer, ends its prompt with stopReason "cancelled", as every
// cancelled prompt does, having recorded and touched nothing; the next
// /rewind works.
func TestRewindCancelledWhilePlanning(t *testing.T) {
	ed := newEditor(map[string]string{})
	a, sid, ws := rewindSession(t, acptest.Options{}, ed)
	release := make(chan struct{})
	ed.mu.Lock()
	ed.hold, ed.held = release, make(chan string, 8)
	ed.mu.Unlock()
	_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "/rewind 1"))
	<-ed.held // planning: bridle waits for the editor's copy of a file
	a.Notify("session/cancel", map[string]any{"sessionId": sid})
	res, rerr := a.Wait(answer)
	ed.mu.Lock()
	ed.hold = nil
	ed.mu.Unlock()
	close(release)
	if rerr != nil {
		t.Fatalf("the cancelled /rewind answered error %d %q, want stopReason \"cancelled\"", rerr.Code, rerr.Message)
	}
	var got struct {
		StopReason string `json:"stopReason"`
	}
	if err := json.Unmarshal(res, &got); err != nil || got.StopReason != "cancelled" {
		t.Fatalf("the cancelled /rewind answered %s, want stopReason \"cancelled\"", res)
	}
	if k := acptest.Kinds(acptest.Log(t, a.DB, sid)); strings.Contains(k, "rewind") {
		t.Fatalf("the cancelled /rewind recorded: %s", k)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); err != nil {
		t.Fatalf("the cancelled /rewind touched b.txt: %v", err)
	}
	if stop := a.Prompt(sid, "/rewind 1"); stop != "end_turn" {
		t.Fatalf("/rewind 1 after the cancelled one: %s", stop)
	}
	if _, err := os.Stat(filepath.Join(ws, "b.txt")); !os.IsNotExist(err) {
		t.Fatalf("/rewind 1 left b.txt, which the agent created (%v)", err)
	}
	a.CloseStdin()
}

// TestRewindNumberIsDigits: /rewind and /fork take the prompt's number
// as /rewind lists it; "+1", "01", "1.0", "0x1", "-1", "1e0" and a
// full-width "１" are refused with the form to use, and nothing happens;
// spaces around a number are fine.
func TestRewindNumberIsDigits(t *testing.T) {
	a, sid, ws := rewindSession(t, acptest.Options{}, nil)
	file := func(name string) string {
		b, err := os.ReadFile(filepath.Join(ws, name))
		if err != nil {
			return "<none>"
		}
		return string(b)
	}
	tried, accepted := 0, []string{}
	for _, cmd := range []string{"/rewind", "/fork"} {
		for _, arg := range []string{"+1", "01", "1.0", "0x1", "-1", "1e0", "１"} {
			tried++
			text := cmd + " " + arg
			res, rerr := a.Call("session/prompt", acptest.PromptParams(sid, text))
			if rerr == nil {
				accepted = append(accepted, fmt.Sprintf("%s → %s", text, res))
				continue
			}
			if rerr.Code != -32602 || !strings.Contains(rerr.Message, "in digits counted from 1") || !strings.Contains(rerr.Message, fmt.Sprintf("%q", arg)) {
				t.Errorf("%s: error %d %q, want -32602 naming %q and the form", text, rerr.Code, rerr.Message, arg)
			}
		}
	}
	t.Logf("%d spellings other than digits tried, %d accepted", tried, len(accepted))
	if len(accepted) > 0 {
		t.Errorf("%d of %d accepted:\n%s", len(accepted), tried, strings.Join(accepted, "\n"))
	}
	if k := acptest.Kinds(acptest.Log(t, a.DB, sid)); strings.Contains(k, "rewind") {
		t.Errorf("a refused /rewind recorded: %s", k)
	}
	var list struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
		} `json:"sessions"`
	}
	a.MustCall("session/list", map[string]any{}, &list)
	if len(list.Sessions) != 1 {
		t.Errorf("a refused /fork made a session: %d sessions", len(list.Sessions))
	}
	if file("a.txt") != "v2\n" || file("b.txt") != "new\n" {
		t.Fatalf("refused commands changed the files: a.txt %q, b.txt %q", file("a.txt"), file("b.txt"))
	}
	if stop := a.Prompt(sid, "  /rewind   2  "); stop != "end_turn" {
		t.Fatalf("/rewind 2 with spaces around: %s", stop)
	}
	if file("a.txt") != "v1\n" || file("b.txt") != "<none>" {
		t.Fatalf("after /rewind 2: a.txt %q, b.txt %q", file("a.txt"), file("b.txt"))
	}
	a.CloseStdin()
}
