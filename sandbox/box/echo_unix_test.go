//go:build unix

package box

import (
	"strings"
	"testing"
)

func TestRunEcho(t *testing.T) {
	b := New(Options{})
	dir := t.TempDir()
	o, out := run(t, b, dir, "echo hello; echo err >&2; pwd; exit 3")
	if o.ExitCode != 3 || !strings.Contains(out, "hello\nerr\n"+dir) {
		t.Fatalf("outcome %+v output %q", o, out)
	}
	t.Logf("applied: %v", o.Applied)
	t.Logf("missing: %v", o.Missing)
	t.Log(b.Report().String())
}
