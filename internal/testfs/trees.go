package testfs

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// GoTree copies Go's own source tree ($(go env GOROOT)/src, about 11,000
// files) into a new directory below tb's temporary directory and commits
// it to a git repository there, as a real-sized repository for
// benchmarks and tests whose cost must not grow with the workspace. It
// stops the test when Go's sources or git are missing, saying which.
func GoTree(tb testing.TB) string {
	tb.Helper()
	src := filepath.Join(goroot(tb), "src")
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		tb.Fatalf("Go's source tree is needed as a real-sized repository and is not at %s: %v", src, err)
	}
	dir := filepath.Join(tb.TempDir(), "gosrc")
	if err := copyTree(src, dir); err != nil {
		tb.Fatalf("copy Go's source tree: %v", err)
	}
	Commit(tb, dir)
	return dir
}

// GeneratedTree writes files small source files, a hundred per directory,
// into a new directory below tb's temporary directory (100,000 is the
// large repository the benchmarks measure), and commits them to a git
// repository there when commit is set.
func GeneratedTree(tb testing.TB, files int, commit bool) string {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), fmt.Sprintf("tree%d", files))
	body := []byte(strings.Repeat("func handler(w http.ResponseWriter, r *http.Request) { return }\n", 16))
	for i := range files {
		sub := filepath.Join(dir, fmt.Sprintf("pkg%04d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.go", i%100)), body, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	if commit {
		Commit(tb, dir)
	}
	return dir
}

// Commit makes dir a git repository holding everything in it as one
// commit, with an identity of its own so that the user's git settings do
// not matter.
func Commit(tb testing.TB, dir string) {
	tb.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		tb.Fatalf("git is needed to make a repository of %s: %v (apt-get install git)", dir, err)
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-q", "-m", "tree", "--no-gpg-sign"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			tb.Fatalf("git %s in %s: %v\n%s", args[0], dir, err, out)
		}
	}
}

func goroot(tb testing.TB) string {
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		if r := strings.TrimSpace(string(out)); r != "" {
			return r
		}
	}
	return runtime.GOROOT()
}

// copyTree copies the regular files and directories below src to dst,
// with their modes; links and other kinds are left out.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			return copyFile(p, to)
		}
		return nil
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm()|0o200)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
