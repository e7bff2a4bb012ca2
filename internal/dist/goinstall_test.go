package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// TestGoInstall is a Go user's install: `go install
// github.com/bridle-dev/bridle@latest`. The module is served as the Go
// module proxy would serve a tagged release (list, info, mod, zip made
// from the committed tree with the go command's own zip rules) from a
// file:// proxy ahead of the configured one, so nothing is fetched from
// GitHub; the dependencies come from the module cache. The installed
// binary must report the release's version and run.
func TestGoInstall(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("TestGoInstall needs git (and tar), to zip the committed tree as a release would be")
	}
	raw, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	release := strings.TrimSpace(string(raw))
	// A version of its own for each run: the go command keeps what it
	// downloads by version, and would install an earlier run's tree.
	// A numeric prerelease identifier may not start with 0 (semver), and
	// nanoseconds often do: they go in an alphanumeric one.
	now := time.Now().UTC()
	version := fmt.Sprintf("v%s-gotest.%s.n%09d", release, now.Format("20060102150405"), now.Nanosecond())
	const path = "github.com/bridle-dev/bridle"
	t.Cleanup(func() { forgetModule(t, gobin, path, version) })

	proxy := t.TempDir()
	dir := filepath.Join(proxy, path, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	zf, err := os.Create(filepath.Join(dir, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	// The committed tree, as a tag would hold it: git archive works in a
	// clone and in a worktree alike (zip.CreateFromVCS wants a .git
	// directory, which a worktree does not have).
	tree := t.TempDir()
	archive := exec.Command("sh", "-c", `git -C "$1" archive --format=tar HEAD | tar -x -C "$2"`, "sh", root, tree)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive HEAD: %v\n%s", err, out)
	}
	if err := zip.CreateFromDir(zf, module.Version{Path: path, Version: version}, tree); err != nil {
		t.Fatalf("zip the module at HEAD: %v", err)
	}
	if err := zf.Close(); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]any{"Version": version, "Time": time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)})
	for name, data := range map[string][]byte{"list": []byte(version + "\n"), version + ".info": info, version + ".mod": gomod} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	upstream := strings.TrimSpace(goEnv(t, gobin, "GOPROXY"))
	bin := t.TempDir()
	cmd := exec.Command(gobin, "install", path+"@latest")
	cmd.Dir = t.TempDir() // outside any module, as a user runs it
	cmd.Env = append(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+","+upstream,
		"GONOSUMDB="+path, // not published: no checksum to look up
		"GOBIN="+bin, "GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go install %s@latest: %v\n%s", path, err, out.String())
	}

	installed := filepath.Join(bin, "bridle")
	v := run(t, bin, installed, "--version")
	if !strings.Contains(v, "bridle "+release) {
		t.Errorf("the installed bridle --version = %q, want version %s", v, release)
	}
	if d := run(t, bin, installed, "doctor"); !strings.Contains(d, "sandbox layers") {
		t.Errorf("the installed bridle doctor printed no sandbox report:\n%s", d)
	}
}

func goEnv(t *testing.T, gobin, name string) string {
	t.Helper()
	b, err := exec.Command(gobin, "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return string(b)
}

// forgetModule removes what go install put in the module cache for this
// run's version (the go command makes it read-only).
func forgetModule(t *testing.T, gobin, path, version string) {
	cache := strings.TrimSpace(goEnv(t, gobin, "GOMODCACHE"))
	dl := filepath.Join(cache, "cache", "download", path, "@v")
	matches, _ := filepath.Glob(filepath.Join(dl, version+".*"))
	for _, dir := range append(matches, filepath.Join(cache, path+"@"+version)) {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("clean the module cache: %v", err)
		}
	}
}
