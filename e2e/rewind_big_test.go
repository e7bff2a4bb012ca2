package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/internal/testfs"
)

// bigTreeScenario's command changes, creates and deletes files across a
// generated tree (testfs.GeneratedTree: pkgNNNN/fNNN.go, a hundred a
// directory), renames a directory, and the next prompt rewinds it.
const bigTreeScenario = `{"turns": [
	{"match": "CHANGE", "calls": [
		{"tool_calls": [{"name": "run_command", "input": {"command": "printf 'changed\\n' > pkg0000/f000.go && rm pkg0001/f001.go && mkdir -p made/deep && printf 'new\\n' > made/deep/new.go && printf 'more\\n' >> %[1]s && mv pkg0002 moved"}}]},
		{"text": "changed"}]}
]}`

// TestRewindOnABigTree: a rewind puts back what a command did on a
// repository of any size: at 25,000 files (past the 20,000 files the
// scans around commands stopped at, so before this the command's
// changes went unrecorded and the rewind could not put them back) and
// at 100,000.
//
// The tree is made once: 25,000 files, then grown to 100,000 (making
// the files is most of the test's time).
func TestRewindOnABigTree(t *testing.T) {
	ws := testfs.GeneratedTree(t, 25_000, false)
	original, err := os.ReadFile(filepath.Join(ws, "pkg0000", "f000.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{25_000, 100_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			growTree(t, ws, n, original)
			last := fmt.Sprintf("pkg%04d/f%03d.go", (n-1)/100, (n-1)%100)
			a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, fmt.Sprintf(bigTreeScenario, last))})
			a.Initialize()
			sid := a.NewSession(ws)
			a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
			if stop := a.Prompt(sid, "CHANGE"); stop != "end_turn" {
				t.Fatalf("CHANGE: %s", stop)
			}
			file := func(name string) string { return fileIn(ws, name) }
			if file("pkg0000/f000.go") != "changed\n" || file("pkg0001/f001.go") != "<none>" || file("made/deep/new.go") != "new\n" ||
				file("moved/f000.go") != string(original) || file("pkg0002/f000.go") != "<none>" {
				t.Fatalf("the command did not run as written")
			}
			for _, r := range results(t, a.DB, sid) {
				if why, _ := r["unscanned"].(string); why != "" {
					t.Errorf("the command's changes were not all recorded: %s", why)
				}
			}
			if stop := a.Prompt(sid, "/rewind 1"); stop != "end_turn" {
				t.Fatalf("/rewind 1: %s", stop)
			}
			if rewound := rewoundText(a, sid); strings.Contains(rewound, "Left alone") {
				t.Errorf("the rewind left files alone: %s", rewound)
			}
			want := map[string]string{"pkg0000/f000.go": string(original), "pkg0001/f001.go": string(original), last: string(original),
				"made/deep/new.go": "<none>", "pkg0002/f000.go": string(original), "pkg0002/f099.go": string(original), "moved/f000.go": "<none>"}
			for name, content := range want {
				if got := file(name); got != content {
					t.Errorf("after /rewind 1: %s = %.20q, want %.20q", name, got, content)
				}
			}
			if _, err := os.Stat(filepath.Join(ws, "made")); !os.IsNotExist(err) {
				t.Errorf("made/, which the command made, is still there (%v)", err)
			}
			// The renamed directory's new name stays, empty: it was not
			// made since the prompt (its birth time is the old one's).
			os.Remove(filepath.Join(ws, "moved"))
			a.CloseStdin()
		})
	}
}

// growTree adds files to a tree testfs.GeneratedTree made, as it would
// have made them, until it holds n.
func growTree(t *testing.T, dir string, n int, body []byte) {
	t.Helper()
	for i := 0; i < n; i++ {
		sub := filepath.Join(dir, fmt.Sprintf("pkg%04d", i/100))
		if i%100 == 0 {
			if _, err := os.Stat(sub); err == nil {
				i += 99 // a directory that is there is whole
				continue
			}
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.go", i%100)), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fileIn is what name below ws holds, "<none>" when it cannot be read.
func fileIn(ws, name string) string {
	b, err := os.ReadFile(filepath.Join(ws, name))
	if err != nil {
		return "<none>"
	}
	return string(b)
}

// rewoundText is what the last rewind of session sid told the editor.
func rewoundText(a *acptest.Agent, sid string) string {
	text := ""
	for _, u := range a.Updates(sid) {
		if strings.HasPrefix(u.Text, "Rewound to before prompt") || strings.HasPrefix(u.Text, "Undid the rewind") {
			text = u.Text
		}
	}
	return text
}
