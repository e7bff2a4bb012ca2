package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/internal/lsptest"
	"github.com/bridle-dev/bridle/internal/testfs"
)

// repoCopy copies this repository's committed files into a new workspace:
// a real Go module of ~680 files for gopls to load.
func repoCopy(tb testing.TB) string {
	tb.Helper()
	out, err := exec.Command("git", "-C", acptest.Root(), "ls-files").Output()
	if err != nil {
		tb.Fatalf("git ls-files: %v", err)
	}
	dir := filepath.Join(tb.TempDir(), "bridle")
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		b, err := os.ReadFile(filepath.Join(acptest.Root(), f))
		if err != nil {
			continue // a file deleted but not committed
		}
		testfs.Write(tb, filepath.Join(dir, f), string(b))
	}
	return dir
}

// editTurns is a scenario of n prompts ("edit <0>" …), each an edit of
// file that moves its marker comment on by one, then an answer.
func editTurns(file string, n int) string {
	var turns []string
	for i := range n {
		turns = append(turns, fmt.Sprintf(`{"match": "edit <%d>", "calls": [%s, {"text": "Done."}]}`, i,
			editCall(file, fmt.Sprintf("// bench %d\n", i), fmt.Sprintf("// bench %d\n", i+1))))
	}
	return `{"turns": [` + strings.Join(turns, ",") + `]}`
}

// markFile ends file (in ws) with the benchmark's first marker.
func markFile(tb testing.TB, ws, file string) {
	tb.Helper()
	p := filepath.Join(ws, file)
	b, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	text := string(b)
	if i := strings.Index(text, "\n// bench "); i >= 0 {
		text = text[:i+1]
	}
	testfs.Write(tb, p, text+"// bench 0\n")
}

// BenchmarkEditToDiagnostics: through the real binary, the round trip of
// a prompt whose turn edits a file and ends (two scripted model calls and
// the edit), p50 over b.N, with a warm server (a first edit, not timed,
// waits for it to load): gopls on a copy of this repository and on a copy
// of Go's source tree, the test server answering at once (bridle's own
// overhead: fake minus none), and no server (none). For gopls it reports
// the memory of the server's box as its cgroup counts it.
// BRIDLE_BIN=$PWD/bin/bridle go test -run '^$' -bench EditToDiagnostics -benchtime 20x ./e2e
func BenchmarkEditToDiagnostics(b *testing.B) {
	gopls := lsptest.Gopls(b)
	goPath := gopls + ":" + goDir(b) + ":/usr/bin:/bin"
	cases := []struct {
		name, file string
		ws         func(testing.TB) string
		settings   func(testing.TB) string
		path       string
		gopls      bool
	}{
		{"none", "a.src", srcWorkspace, func(testing.TB) string { return `{}` }, "/usr/bin:/bin", false},
		{"fake", "a.src", srcWorkspace, func(tb testing.TB) string { return fakeServerSettings(tb, 60, nil) }, "/usr/bin:/bin", false},
		{"none-bridle", "permission/permission.go", repoCopy, func(testing.TB) string { return `{}` }, "/usr/bin:/bin", false},
		{"gopls-bridle", "permission/permission.go", repoCopy, func(testing.TB) string { return `{"lsp": {"wait_seconds": 300}}` }, goPath, true},
		{"gopls-goroot", "strings/strings.go", testfs.GoTree, func(testing.TB) string { return `{"lsp": {"wait_seconds": 300}}` }, goPath, true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ws := c.ws(b)
			markFile(b, ws, c.file)
			cfg, _ := userSettings(b, c.settings(b))
			a := acptest.Start(b, acptest.Options{Model: acptest.Scenario(b, editTurns(c.file, b.N+1)), Unchecked: true,
				Env: []string{cfg, "PATH=" + c.path, "XDG_CACHE_HOME=" + b.TempDir()}})
			a.Initialize()
			sid := a.NewSession(ws)
			a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "auto-edit"}, nil)
			if stop := longPrompt(b, a, sid, "edit <0>"); stop != "end_turn" {
				b.Fatalf("warm-up: %s\n%s", stop, a.Stderr())
			}
			took := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				if stop := a.Prompt(sid, fmt.Sprintf("edit <%d>", i+1)); stop != "end_turn" {
					b.Fatalf("edit %d: %s", i+1, stop)
				}
				took = append(took, time.Since(start))
			}
			b.StopTimer()
			out := outputs(b, a.DB, sid)
			last := out[len(out)-1]
			if !strings.HasPrefix(c.name, "none") && !strings.Contains(last, "no new problems after this edit") {
				b.Fatalf("the last edit's result has no diagnostics:\n%s", last)
			}
			slices.Sort(took)
			b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
			if c.gopls {
				cur, peak := serverMemory(b, filepath.Join(gopls, "gopls"))
				b.ReportMetric(cur, "server-MiB")
				b.ReportMetric(peak, "server-peak-MiB")
			}
			// Ended before the workspace is removed: its watcher and
			// servers are gone by then.
			a.CloseStdin()
			a.WaitExit()
		})
	}
}

// srcWorkspace is a workspace of one file the test server serves.
func srcWorkspace(tb testing.TB) string {
	return acptest.Workspace(tb, map[string]string{"a.src": "ok\n"})
}

// BenchmarkGoplsColdStart: through the real binary, a fresh bridle (and
// fresh caches: gopls's are in the box's private directory) whose first
// prompt edits a file: from the prompt to its answer, whose edit result
// holds gopls's diagnostics (it waits for gopls to start and load).
// BRIDLE_BIN=$PWD/bin/bridle go test -run '^$' -bench GoplsColdStart -benchtime 3x ./e2e
func BenchmarkGoplsColdStart(b *testing.B) {
	gopls := lsptest.Gopls(b)
	for _, c := range []struct {
		name, file string
		ws         func(testing.TB) string
	}{
		{"bridle", "permission/permission.go", repoCopy},
		{"goroot", "strings/strings.go", testfs.GoTree},
	} {
		b.Run(c.name, func(b *testing.B) {
			ws := c.ws(b)
			cfg, _ := userSettings(b, `{"lsp": {"wait_seconds": 300}}`)
			for range b.N {
				b.StopTimer()
				markFile(b, ws, c.file)
				a := acptest.Start(b, acptest.Options{Model: acptest.Scenario(b, editTurns(c.file, 1)), Unchecked: true,
					Env: []string{cfg, "PATH=" + gopls + ":" + goDir(b) + ":/usr/bin:/bin", "XDG_CACHE_HOME=" + b.TempDir()}})
				a.Initialize()
				sid := a.NewSession(ws)
				a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "auto-edit"}, nil)
				b.StartTimer()
				if stop := longPrompt(b, a, sid, "edit <0>"); stop != "end_turn" {
					b.Fatalf("%s\n%s", stop, a.Stderr())
				}
				b.StopTimer()
				if out := outputs(b, a.DB, sid); !strings.Contains(out[0], "gopls: no new problems after this edit") {
					b.Fatalf("the first edit's result has no diagnostics:\n%s", out[0])
				}
				a.CloseStdin()
				a.WaitExit()
				b.StartTimer()
			}
		})
	}
}

// longPrompt is Agent.Prompt without its 30 s bound: gopls's first load
// of Go's source tree takes longer.
func longPrompt(b *testing.B, a *acptest.Agent, sid, text string) string {
	b.Helper()
	_, answer := a.Request("session/prompt", acptest.PromptParams(sid, text))
	m, err := a.Conn.Wait(answer, 15*time.Minute)
	if err != nil || m.Error != nil {
		b.Fatalf("prompt %q: %v %v\n%s", text, err, m.Error, a.Stderr())
	}
	var resp struct {
		StopReason string `json:"stopReason"`
	}
	json.Unmarshal(m.Result, &resp)
	return resp.StopReason
}

// serverMemory is the memory of the running server program's cgroup (its
// box), now and at its peak, in MiB, as the kernel counts it (cgroup v2's
// memory.current and memory.peak, v1's usage and max usage).
func serverMemory(b *testing.B, program string) (cur, peak float64) {
	b.Helper()
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		if exe, _ := os.Readlink(filepath.Join("/proc", p.Name(), "exe")); exe != program {
			continue
		}
		cg, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cgroup"))
		if err != nil {
			continue
		}
		// cgroup v1's memory controller where it is mounted (a hybrid
		// hierarchy), else v2's. The box has a cgroup namespace: the path
		// is its own, named after the box's directory, which is found
		// under the hierarchy.
		root, inner, current, peak := "/sys/fs/cgroup", "", "memory.current", "memory.peak"
		for _, line := range strings.Split(strings.TrimSpace(string(cg)), "\n") {
			f := strings.SplitN(line, ":", 3)
			switch {
			case len(f) == 3 && f[1] == "memory":
				root, inner, current, peak = "/sys/fs/cgroup/memory", f[2], "memory.usage_in_bytes", "memory.max_usage_in_bytes"
			case len(f) == 3 && f[0] == "0" && inner == "":
				inner = f[2]
			}
		}
		var path string
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && d.Name() == filepath.Base(inner) {
				path = p
				return filepath.SkipAll
			}
			return nil
		})
		if path == "" {
			b.Fatalf("the server's cgroup %s is not found under %s", inner, root)
		}
		read := func(name string) float64 {
			v, err := os.ReadFile(filepath.Join(path, name))
			if err != nil {
				b.Fatalf("the server's cgroup %s: %v", path, err)
			}
			n, _ := strconv.ParseFloat(strings.TrimSpace(string(v)), 64)
			return n / (1 << 20)
		}
		return read(current), read(peak)
	}
	b.Fatalf("no running %s found", program)
	return 0, 0
}
