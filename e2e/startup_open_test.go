package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// TestTheDatabaseOpensOnceTheEditorAsks: bridle opens its database (and
// makes its directories) once initialize has been answered, or when
// another message comes first, not while it answers initialize (two busy
// cores gave the answer ~0.7 ms of the open's CPU). An editor that goes
// away without asking anything leaves nothing behind; one that only
// initializes, or skips initialize, gets a working bridle.
func TestTheDatabaseOpensOnceTheEditorAsks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ask    func(a *acptest.Agent, ws string)
		wantDB bool
	}{
		{"nothing asked", func(*acptest.Agent, string) {}, false},
		{"initialize only", func(a *acptest.Agent, _ string) { a.Initialize() }, true},
		{"session/new first", func(a *acptest.Agent, ws string) { a.NewSession(ws) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := t.TempDir()
			db := filepath.Join(data, "data", "bridle.db")
			ws := acptest.Workspace(t, nil)
			a := acptest.Start(t, acptest.Options{DB: db, Model: "scripted/demo", Env: []string{"XDG_CACHE_HOME=" + filepath.Join(data, "cache")}})
			tc.ask(a, ws)
			if code := a.CloseStdin(); code != 0 {
				t.Fatalf("exit code %d:\n%s", code, a.Stderr())
			}
			_, err := os.Stat(db)
			if got := err == nil; got != tc.wantDB {
				t.Errorf("database made: %v, want %v (%v)", got, tc.wantDB, err)
			}
			if !tc.wantDB {
				if _, err := os.Stat(filepath.Dir(db)); err == nil {
					t.Errorf("bridle made its data directory for an editor that asked nothing")
				}
			}
		})
	}
}
