package box

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/testfs"
	"golang.org/x/sys/windows"
)

// The test binary is also the commands' helper: with BOX_TEST_HELPER set
// it does what the variable says instead of running the tests.
//   - "spawn FILE": start this binary as "sleep", write its pid to FILE,
//     then exit (or, with "spawn-stay FILE", wait forever);
//   - "sleep": wait forever.
func init() {
	mode, arg, _ := strings.Cut(os.Getenv("BOX_TEST_HELPER"), " ")
	switch mode {
	case "":
		return
	case "spawn", "spawn-stay":
		self, _ := os.Executable()
		c := exec.Command(self)
		c.Env = append(os.Environ(), "BOX_TEST_HELPER=sleep")
		if err := c.Start(); err != nil {
			fmt.Println("spawn failed:", err)
			os.Exit(2)
		}
		if err := os.WriteFile(arg, []byte(strconv.Itoa(c.Process.Pid)), 0o644); err != nil {
			os.Exit(3)
		}
		fmt.Println("spawned", c.Process.Pid)
		if mode == "spawn-stay" {
			sleepForever()
		}
		os.Exit(0)
	case "sleep":
		sleepForever()
	}
	os.Exit(99)
}

// sleepForever blocks without the runtime calling it a deadlock.
func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// helperCommand is the command line that runs this test binary as the
// helper mode (cmd.exe quoting).
func helperCommand(t *testing.T, mode string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`set "BOX_TEST_HELPER=%s"& "%s"`, mode, self)
}

func winRun(t *testing.T, b *Box, dir, command string, tweak ...func(*Spec)) (Outcome, string) {
	t.Helper()
	return run(t, b, dir, command, append([]func(*Spec){func(s *Spec) { s.Env = os.Environ() }}, tweak...)...)
}

// gone waits (up to 20 s) for the process pid to have exited.
func gone(pid int) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return true // no such process any more
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 20_000)
	return err == nil && ev == windows.WAIT_OBJECT_0
}

func readPid(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the helper wrote no pid: %v", err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatalf("pid file holds %q", b)
	}
	return pid
}

func TestRunCmdExe(t *testing.T) {
	b := New(Options{})
	dir := testfs.TempDir(t)
	o, out := winRun(t, b, dir, `echo hello& echo err 1>&2& cd& echo tmp=%TEMP%& exit /b 3`)
	if o.ExitCode != 3 || !strings.Contains(out, "hello") || !strings.Contains(out, "err") || !strings.Contains(strings.ToLower(out), strings.ToLower(dir)) {
		t.Fatalf("outcome %+v output %q", o, out)
	}
	// The private temp dir is the command's own, and gone afterwards.
	_, tmp, _ := strings.Cut(out, "tmp=")
	tmp = strings.TrimSpace(tmp)
	if !strings.Contains(filepath.Base(tmp), "bridle-box-") {
		t.Errorf("TEMP = %q, not a private dir", tmp)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("the private temp dir %s is still there: %v", tmp, err)
	}
	t.Logf("applied: %v", o.Applied)
	t.Logf("missing: %v", o.Missing)
}

// The whole tree is killed, not only cmd.exe: when the command ends
// (a process it left running), at its timeout, and when it is cancelled.
func TestTreeKilled(t *testing.T) {
	for _, tt := range []struct {
		name, mode string
		timeout    time.Duration
		cancel     bool
		ended      func(Outcome) bool
	}{
		{"when the command ends", "spawn", 0, false, func(o Outcome) bool { return o.ExitCode == 0 }},
		{"on timeout", "spawn-stay", 3 * time.Second, false, func(o Outcome) bool { return o.TimedOut }},
		{"on cancel", "spawn-stay", 0, true, func(o Outcome) bool { return o.Cancelled }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := testfs.TempDir(t)
			pidFile := filepath.Join(dir, "pid")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// The helper says "spawned" once its child runs: then the
			// command is cancelled, if it is to be.
			out := &spawnWatch{spawned: make(chan struct{})}
			timeout := tt.timeout
			if timeout == 0 {
				timeout = time.Minute
			}
			done := make(chan Outcome, 1)
			go func() {
				o, err := New(Options{}).Run(ctx, Spec{Command: helperCommand(t, tt.mode+" "+pidFile), Dir: dir, Output: out,
					Env: os.Environ(), Timeout: timeout})
				if err != nil {
					t.Error(err)
				}
				done <- o
			}()
			var o Outcome
			select {
			case <-out.spawned:
				if tt.cancel {
					cancel()
				}
				o = <-done
			case o = <-done:
			}
			if !tt.ended(o) {
				t.Fatalf("outcome %+v output %q", o, out.String())
			}
			if pid := readPid(t, pidFile); !gone(pid) {
				t.Errorf("the process %d the command started outlived it", pid)
			}
		})
	}
}

// spawnWatch is an output that tells when the helper said "spawned".
type spawnWatch struct {
	syncBuffer
	once    sync.Once
	spawned chan struct{}
}

func (w *spawnWatch) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	if strings.Contains(w.syncBuffer.String(), "spawned") {
		w.once.Do(func() { close(w.spawned) })
	}
	return n, err
}

// The report names what the job gives and what Windows lacks, and full-auto
// is told commands are not kept in.
func TestWindowsReport(t *testing.T) {
	r := New(Options{}).Report()
	ok := map[string]bool{}
	for _, l := range r.Layers {
		ok[l.Name] = l.OK
	}
	for _, name := range []string{"process tree", "process cap", "memory cap"} {
		if !ok[name] {
			t.Errorf("%s is not reported as there:\n%s", name, r)
		}
	}
	for _, name := range []string{"filesystem confinement", "network confinement", "syscall filter", "write watch"} {
		if v, listed := ok[name]; !listed || v {
			t.Errorf("%s is not reported missing:\n%s", name, r)
		}
	}
	if r.Unconfined() == "" {
		t.Errorf("Unconfined() is empty: full-auto would not ask")
	}
}

// TestRunStdinWindows: cmd.exe's command reads Spec.Stdin (a hook's
// event) and a StdinPipe (a background command's input); without either
// it reads the null device.
func TestRunStdinWindows(t *testing.T) {
	b := New(Options{})
	dir := testfs.TempDir(t)
	const line = `set /p X= & call echo got:%X%`
	if _, out := run(t, b, dir, line, func(s *Spec) { s.Stdin = []byte("event\r\n") }); !strings.Contains(out, "got:event") {
		t.Errorf("Stdin: %q", out)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w.WriteString("from the pipe\r\n")
	w.Close()
	if _, out := run(t, b, dir, line, func(s *Spec) { s.StdinPipe = r }); !strings.Contains(out, "got:from the pipe") {
		t.Errorf("StdinPipe: %q", out)
	}
	if _, out := run(t, b, dir, line); strings.Contains(out, "got:event") || strings.Contains(out, "got:from") {
		t.Errorf("without stdin: %q", out)
	}
}
