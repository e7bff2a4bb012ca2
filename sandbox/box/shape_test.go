//go:build linux

package box

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// missingSays fails the test unless a missing layer of o starts with
// prefix: a layer the box lacks is named in every result.
func missingSays(t *testing.T, o Outcome, prefix string) {
	t.Helper()
	if !slices.ContainsFunc(o.Missing, func(m string) bool { return strings.HasPrefix(m, prefix) }) {
		t.Fatalf("the result does not say %q is missing: %v", prefix, o.Missing)
	}
}

func appliedHas(o Outcome, prefix string) bool {
	return slices.ContainsFunc(o.Applied, func(a string) bool { return strings.HasPrefix(a, prefix) })
}

// TestNoMetadataChangesOutside: Landlock confines writes of content, not
// of metadata; the box's read-only root stops chmod, utime and xattrs on
// files outside the workspace.
func TestNoMetadataChangesOutside(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "file")
	if err := os.WriteFile(victim, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(victim, old, old)
	for mode, b := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			o, out := marked(t, b, context.Background(),
				`chmod 777 `+victim+`; echo chmod=$?; touch -m `+victim+`; echo touch=$?; `+
					`/usr/bin/python3 -c "import os; os.setxattr('`+victim+`', 'user.bridle', b'1')"; echo xattr=$?`, nil)
			fi, err := os.Stat(victim)
			if err != nil {
				t.Fatal(err)
			}
			if mode == "fallback" {
				// Without a mount namespace the result must say what is not enforced.
				missingSays(t, o, "read-only root")
				os.Chmod(victim, 0o600)
				os.Chtimes(victim, old, old)
				return
			}
			if fi.Mode().Perm() != 0o600 || !fi.ModTime().Equal(old) {
				t.Fatalf("metadata outside changed: mode %v, mtime %v (%q)", fi.Mode().Perm(), fi.ModTime(), out)
			}
			if !strings.Contains(out, "Read-only file system") || !appliedHas(o, "read-only root") {
				t.Fatalf("output %q, applied %v", out, o.Applied)
			}
		})
	}
}

// TestHiddenPaths: bridle's own files and the credential stores are empty
// to commands, for reading and writing, also inside the workspace; a
// command sees only its own processes.
func TestHiddenPaths(t *testing.T) {
	home := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(home, ".local", "share", "bridle")
	must(os.MkdirAll(filepath.Join(data, "artifacts", "ses_other"), 0o700))
	must(os.WriteFile(filepath.Join(data, "bridle.db"), []byte("SESSIONS-OF-EVERYONE"), 0o600))
	must(os.WriteFile(filepath.Join(data, "artifacts", "ses_other", "a1.0"), []byte("OTHER-ARTIFACT"), 0o600))
	must(os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	must(os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("PRIVATE-KEY"), 0o600))
	must(os.WriteFile(filepath.Join(home, ".netrc"), []byte("NETRC-PASSWORD"), 0o600))
	hidden := []string{data, filepath.Join(home, ".ssh"), filepath.Join(home, ".netrc")}
	for mode, b := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			// The workspace is the home directory: the hidden paths are inside it.
			cmd := `cat .local/share/bridle/bridle.db .local/share/bridle/artifacts/*/* .ssh/id_ed25519 .netrc; ` +
				`echo EVIL > .local/share/bridle/bridle.db; echo write=$?; rm -rf .ssh; echo rm=$?; ` +
				`echo pids: $(ls /proc | grep -c '^[0-9]')`
			s := Spec{Command: cmd, Dir: home, Writable: []string{home}, Hidden: hidden, Output: &capped{max: 1 << 20},
				Timeout: 20 * time.Second, Env: []string{"PATH=/usr/bin:/bin"}}
			o, err := b.Run(context.Background(), s)
			out := s.Output.(*capped).String()
			if mode == "fallback" {
				// Nothing can hide them; bridle's files in the workspace
				// would be writable: the command must not run at all.
				if err == nil || !strings.Contains(err.Error(), "no mount namespaces") || strings.Contains(out, "SESSIONS") {
					t.Fatalf("fallback ran a command that could rewrite bridle's files: err %v, output %q", err, out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, secret := range []string{"SESSIONS-OF-EVERYONE", "OTHER-ARTIFACT", "PRIVATE-KEY", "NETRC-PASSWORD"} {
				if strings.Contains(out, secret) {
					t.Errorf("a command read %s: %q", secret, out)
				}
			}
			if got, _ := os.ReadFile(filepath.Join(data, "bridle.db")); string(got) != "SESSIONS-OF-EVERYONE" {
				t.Errorf("a command rewrote the database: %q", got)
			}
			if _, err := os.Stat(filepath.Join(home, ".ssh", "id_ed25519")); err != nil {
				t.Errorf("a command removed a hidden file: %v", err)
			}
			if !appliedHas(o, "hidden paths (3 of 3") || !appliedHas(o, "own /proc") {
				t.Errorf("applied %v", o.Applied)
			}
			// sh, and the ls and grep of the pipe: a handful, not the host's hundreds.
			var pids int
			if i := strings.Index(out, "pids: "); i >= 0 {
				fmt.Sscan(out[i+len("pids: "):], &pids)
			}
			if pids == 0 || pids > 10 {
				t.Errorf("the box sees %d processes in /proc: %q", pids, out)
			}
		})
	}
}

// TestWorkspaceInsideHidden: a workspace inside a hidden directory cannot
// be given to a command without showing what is hidden: refused.
func TestWorkspaceInsideHidden(t *testing.T) {
	data := t.TempDir()
	ws := filepath.Join(data, "ws")
	os.Mkdir(ws, 0o700)
	s := Spec{Command: "true", Dir: ws, Writable: []string{ws}, Hidden: []string{data}, Output: &capped{max: 1 << 10}}
	_, err := New(Options{}).Run(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "lies inside") {
		t.Fatalf("err %v", err)
	}
}

// TestTmpfsLimits: the private $TMPDIR and /dev/shm are memory; each has
// a size limit.
func TestTmpfsLimits(t *testing.T) {
	b := New(Options{})
	o, out := marked(t, b, context.Background(),
		`head -c 40M /dev/zero > "$TMPDIR/big"; echo tmp=$?; head -c 40M /dev/zero > /dev/shm/big; echo shm=$?; `+
			`head -c 20M /dev/zero > "$TMPDIR/ok"; echo ok=$?`,
		func(s *Spec) { s.TmpBytes, s.ShmBytes = 32<<20, 32<<20 })
	if !appliedHas(o, "private $TMPDIR (32 MiB)") {
		t.Fatalf("applied %v", o.Applied)
	}
	if !strings.Contains(out, "tmp=1") || !strings.Contains(out, "shm=1") || !strings.Contains(out, "No space left on device") {
		t.Fatalf("40 MiB fit in 32 MiB tmpfs: %q", out)
	}
	// The first file is still there, half of the second fits: 20 MiB does not.
	if !strings.Contains(out, "ok=1") {
		t.Fatalf("output %q", out)
	}
}

// TestNoNestedUserNamespaces: inside a new user namespace a command has
// every capability over it; seccomp refuses to create one unless allowed.
func TestNoNestedUserNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name  string
		allow bool
	}{{"denied", false}, {"allowed", true}} {
		t.Run(tc.name, func(t *testing.T) {
			o, out := marked(t, New(Options{}), context.Background(),
				`unshare -U id -u; echo unshare=$?`,
				func(s *Spec) { s.AllowUserNamespaces = tc.allow })
			if tc.allow {
				if !strings.Contains(out, "unshare=0") {
					t.Fatalf("allowed, yet: %q", out)
				}
				return
			}
			if strings.Contains(out, "unshare=0") || !strings.Contains(out, "Operation not permitted") {
				t.Fatalf("a command made a user namespace: %q", out)
			}
			if !appliedHas(o, "no new user namespaces") {
				t.Fatalf("applied %v", o.Applied)
			}
		})
	}
}

// TestMemoryLimitWholeCommand: three processes of 2.5 GB each stay under
// the per-process cap of 4 GiB, but not under the command's 4 GiB: the
// command is stopped and the result says the limit was hit.
func TestMemoryLimitWholeCommand(t *testing.T) {
	b := New(Options{})
	b.once.Do(b.probeMachine)
	if !b.caps.cgroup.hasMemory() {
		t.Fatalf("this machine gives bridle no cgroup memory controller (bridle doctor: %s); the whole-command memory limit cannot be tested here", b.caps.cgroupErr)
	}
	o, out := marked(t, b, context.Background(),
		`for i in 1 2 3; do /usr/bin/python3 -c "
import time
n = 2500 << 20
b = bytearray(n)
b[::4096] = b'1' * (n // 4096)
print('held', flush=True)
time.sleep(30)" & done; wait; echo end`,
		func(s *Spec) { s.MemoryBytes = 4 << 30; s.Timeout = 5 * time.Minute })
	if strings.Count(out, "held") == 3 {
		t.Fatalf("7.5 GB held under a 4 GiB limit: %q", out)
	}
	if !o.MemoryLimitHit || !strings.Contains(o.Summary(time.Minute), "memory limit of 4096 MiB") {
		t.Fatalf("the result does not say the limit was hit: %+v, summary %q, output %q", o, o.Summary(time.Minute), out)
	}
	if strings.Contains(out, "end") || o.TimedOut {
		// The shell would print "end" once its children were gone: the
		// whole command must have been stopped, not only one process.
		t.Fatalf("only part of the command was stopped: %+v, output %q", o, out)
	}
}

// TestHiddenWithWorkspaceAtRoot: with the workspace at /, everything is
// writable, and the hidden paths are still empty to the command.
func TestHiddenWithWorkspaceAtRoot(t *testing.T) {
	data := t.TempDir()
	db := filepath.Join(data, "bridle.db")
	if err := os.WriteFile(db, []byte("SESSIONS-OF-EVERYONE"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, out := marked(t, New(Options{}), context.Background(), `cat `+db+`; echo > `+db+`; echo write=$?`,
		func(s *Spec) { s.Dir, s.Writable, s.Hidden = "/", []string{"/"}, []string{data} })
	if strings.Contains(out, "SESSIONS") || !appliedHas(o, "hidden paths (1 of 1") {
		t.Fatalf("with the workspace at /, a command read a hidden file: %q (applied %v)", out, o.Applied)
	}
	if got, _ := os.ReadFile(db); string(got) != "SESSIONS-OF-EVERYONE" {
		t.Fatalf("with the workspace at /, a command rewrote a hidden file: %q", got)
	}
}
