package e2e

import (
	"database/sql"
	"strings"
	"testing"
	"unicode/utf8"

	_ "modernc.org/sqlite" // the test writes what an older bridle left in a database

	"github.com/bridle-dev/bridle/internal/acptest"
)

// maxTitle is the bound on a session's title (store.MaxTitle).
const maxTitle = 80

// TestForkTitlesStayBounded: each fork of a fork names its parent without
// quoting it, so the titles stay within the bound a first prompt's title
// has (quoting doubled the escapes at each level: 134 MB at depth 25);
// and a title an older bridle stored longer is listed and loaded cut.
func TestForkTitlesStayBounded(t *testing.T) {
	ws := acptest.Workspace(t, nil)
	model := acptest.Scenario(t, `{"turns": [{"match": "go", "calls": [{"text": "ok"}]}]}`)
	a := acptest.Start(t, acptest.Options{Model: model})
	a.Initialize()
	sid := a.NewSession(ws)
	for _, p := range []string{`go: say "hi" \ there`, "go on"} {
		if stop := a.Prompt(sid, p); stop != "end_turn" {
			t.Fatalf("%s: %s", p, stop)
		}
	}
	cur := sid
	for depth := 1; depth <= 12; depth++ {
		var fork struct {
			SessionID string `json:"sessionId"`
			Title     string `json:"title"`
		}
		a.MustCall("_bridle/fork", map[string]any{"sessionId": cur, "prompt": 2}, &fork)
		if n := utf8.RuneCountInString(fork.Title); n > maxTitle || strings.Contains(fork.Title, `\"`) || !strings.HasSuffix(fork.Title, "before prompt 2") {
			t.Fatalf("depth %d: a fork titled %d characters, over %d or quoting its parent's: %.200q", depth, n, maxTitle, fork.Title)
		}
		if stop := a.Prompt(fork.SessionID, "go again"); stop != "end_turn" {
			t.Fatalf("depth %d: %s", depth, stop)
		}
		cur = fork.SessionID
	}
	titles := listTitles(t, a)
	if len(titles) != 13 {
		t.Fatalf("session/list shows %d sessions, want 13", len(titles))
	}
	for id, title := range titles {
		if utf8.RuneCountInString(title) > maxTitle {
			t.Errorf("session/list: %s is titled %d characters", id, utf8.RuneCountInString(title))
		}
	}
	a.AssertValid(t)
}

// TestLongStoredTitlesAreReadCut: a title an older bridle stored longer
// than the bound (a fork title doubled at each level) is listed and
// loaded cut to the bound, without reading it whole.
func TestLongStoredTitlesAreReadCut(t *testing.T) {
	ws := acptest.Workspace(t, nil)
	model := acptest.Scenario(t, `{"turns": [{"match": "go", "calls": [{"text": "ok"}]}]}`)
	a := acptest.Start(t, acptest.Options{Model: model})
	a.Initialize()
	sid := a.NewSession(ws)
	a.Prompt(sid, "go")
	a.CloseStdin()
	a.WaitExit()

	db, err := sql.Open("sqlite", a.DB)
	if err != nil {
		t.Fatal(err)
	}
	huge := "Fork of " + strings.Repeat(`\"`, 4<<20)
	if _, err := db.Exec(`UPDATE sessions SET title = ? WHERE id = ?`, huge, sid); err != nil {
		t.Fatal(err)
	}
	db.Close()
	b := acptest.Start(t, acptest.Options{DB: a.DB, Model: model})
	b.Initialize()
	if got := listTitles(t, b)[sid]; got != huge[:maxTitle] {
		t.Errorf("session/list of a title stored at %d bytes: %d bytes, want its first %d characters", len(huge), len(got), maxTitle)
	}
	b.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	titled := 0
	for _, u := range b.Updates(sid) {
		if title, ok := u.Fields["title"].(string); ok && u.Kind == "session_info_update" {
			titled++
			if title != huge[:maxTitle] {
				t.Errorf("session/load sent a title of %d bytes, want its first %d characters", len(title), maxTitle)
			}
		}
	}
	if titled == 0 {
		t.Errorf("session/load sent no title")
	}
	b.AssertValid(t)
}

// listTitles returns session/list's titles by session id.
func listTitles(t *testing.T, a *acptest.Agent) map[string]string {
	t.Helper()
	var list struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
			Title     string `json:"title"`
		} `json:"sessions"`
	}
	a.MustCall("session/list", map[string]any{}, &list)
	out := map[string]string{}
	for _, s := range list.Sessions {
		out[s.SessionID] = s.Title
	}
	return out
}
