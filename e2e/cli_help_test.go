package e2e

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update rewrites the golden files of the command line's output:
// go test ./e2e -run 'TestCLIHelp|TestCLIErrors|TestHeadlessJSON$' -update
var update = flag.Bool("update", false, "rewrite e2e/testdata's golden files")

// golden compares got with the file testdata/name, or writes it with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./e2e -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("output differs from %s (-update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestCLIHelp: every command has its own help, on stdout, exit 0, the
// same by `bridle COMMAND --help`, `-h` and `bridle help COMMAND`; the
// global help names serve and goes to stdout too.
func TestCLIHelp(t *testing.T) {
	for _, cmd := range []string{"", "serve", "demo", "run", "rewind", "sessions", "log", "doctor", "trust"} {
		name := cmd
		if name == "" {
			name = "bridle"
		}
		t.Run(name, func(t *testing.T) {
			forms := [][]string{{"--help"}, {"-h"}, {"help"}}
			if cmd != "" {
				forms = [][]string{{cmd, "--help"}, {cmd, "-h"}, {"help", cmd}, {cmd, "--db", "x.db", "--help"}}
			}
			for _, args := range forms {
				out, errs, err := runCLI(t, nil, args...)
				if err != nil || errs != "" {
					t.Errorf("bridle %s: %v, stderr %q", strings.Join(args, " "), err, errs)
				}
				golden(t, filepath.Join("help", name+".txt"), out)
			}
		})
	}
	out, _, _ := runCLI(t, nil, "--help")
	for _, want := range []string{"bridle serve", "bridle run", "bridle help [COMMAND]"} {
		if !strings.Contains(out, want) {
			t.Errorf("bridle --help does not name %q", want)
		}
	}
}
