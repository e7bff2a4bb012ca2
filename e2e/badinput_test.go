package e2e

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// nullIDError waits for the (seen+1)-th error answer with a null id (one
// bridle could not attribute to a request) and returns its error.
func nullIDError(t *testing.T, a *acptest.Agent, seen int) *acptest.RPCError {
	t.Helper()
	var found *acptest.RPCError
	a.WaitNote(func(acptest.Msg) bool {
		n := 0
		for _, m := range a.NotesLocked() {
			if m.Method == "" && m.Error != nil {
				if m.ID != nil {
					t.Errorf("error answer id = %s, want null", *m.ID)
				}
				if n == seen {
					found = m.Error
					return true
				}
				n++
			}
		}
		return false
	})
	return found
}

func TestBadInputIsAnsweredAndTheConnectionSurvives(t *testing.T) {
	ws := acptest.Workspace(t, nil)
	for _, framing := range []acptest.Framing{acptest.NDJSON, acptest.ContentLength} {
		t.Run(fmt.Sprint("framing ", framing), func(t *testing.T) {
			a := acptest.Start(t, acptest.Options{Model: "scripted/demo", Framing: framing})
			a.Initialize()
			seen := 0
			unattributed := []struct {
				name, body string
				code       int
				says       string
			}{
				{"malformed JSON", `{"jsonrpc":"2.0","id":7,"method":`, -32700, "not valid JSON"},
				{"a batch", `[{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":1}}]`, -32600, "batch"},
				{"not an object", `"hello"`, -32600, "object"},
			}
			for _, c := range unattributed {
				a.WriteFrame([]byte(c.body))
				err := nullIDError(t, a, seen)
				seen++
				if err.Code != c.code || !strings.Contains(err.Message, c.says) {
					t.Errorf("%s: answered %v, want %d saying %q", c.name, err, c.code, c.says)
				}
			}

			calls := []struct {
				name   string
				method string
				params any
				code   int
				says   []string
			}{
				{"unknown method", "session/fly", map[string]any{}, -32601, []string{"session/fly", "not supported"}},
				{"wrong type", "session/new", map[string]any{"cwd": 5, "mcpServers": []any{}}, -32602, []string{`"cwd"`, "string"}},
				{"missing field", "session/new", map[string]any{"mcpServers": []any{}}, -32602, []string{`"cwd"`, "required"}},
				{"relative cwd", "session/new", map[string]any{"cwd": "src/app", "mcpServers": []any{}}, -32602, []string{"src/app", "absolute"}},
				{"missing cwd dir", "session/new", map[string]any{"cwd": ws + "/nope", "mcpServers": []any{}}, -32602, []string{"nope"}},
				{"params not an object", "session/new", []any{1}, -32602, []string{"object"}},
				{"unknown session", "session/prompt", acptest.PromptParams("ses_doesnotexist", "hi"), -32002, []string{"ses_doesnotexist", "session/list"}},
				{"unknown session load", "session/load", map[string]any{"sessionId": "ses_nope", "cwd": ws, "mcpServers": []any{}}, -32002, []string{"ses_nope"}},
				{"prompt without blocks", "session/prompt", map[string]any{"sessionId": "x"}, -32602, []string{`"prompt"`}},
				{"unknown mode", "session/set_mode", map[string]any{"sessionId": "x", "modeId": "yolo"}, -32002, []string{"x"}},
				{"bad cursor", "session/list", map[string]any{"cursor": "garbage"}, -32602, []string{"cursor"}},
			}
			for _, c := range calls {
				_, err := a.Call(c.method, c.params)
				if err == nil {
					t.Errorf("%s: no error", c.name)
					continue
				}
				if err.Code != c.code {
					t.Errorf("%s: code %d (%s), want %d", c.name, err.Code, err.Message, c.code)
				}
				for _, s := range c.says {
					if !strings.Contains(err.Message, s) {
						t.Errorf("%s: message %q does not mention %q", c.name, err.Message, s)
					}
				}
			}

			// After all that, the connection still works.
			sid := a.NewSession(ws)
			_, err := a.Call("session/set_mode", map[string]any{"sessionId": sid, "modeId": "yolo"})
			if err == nil || err.Code != -32602 || !strings.Contains(err.Message, "read-only, ask, auto-edit, full-auto") {
				t.Errorf("unknown mode: %v", err)
			}
			a.Initialize()
			a.AssertValid(t)
		})
	}
}

func TestOversizedFrameIsSkippedWithBoundedMemory(t *testing.T) {
	for _, framing := range []acptest.Framing{acptest.NDJSON, acptest.ContentLength} {
		t.Run(fmt.Sprint("framing ", framing), func(t *testing.T) {
			a := acptest.Start(t, acptest.Options{Model: "scripted/demo", Framing: framing})
			a.Initialize()
			// 80 MiB: a string inside a valid request, so only the size is wrong.
			huge := bytes.Repeat([]byte("a"), 80<<20)
			body := append([]byte(`{"jsonrpc":"2.0","id":99,"method":"initialize","params":{"protocolVersion":1,"_meta":{"x":"`), huge...)
			body = append(body, `"}}}`...)
			a.WriteFrame(body)
			err := nullIDError(t, a, 0)
			if err.Code != -32600 || !strings.Contains(err.Message, "64 MiB") {
				t.Fatalf("oversized frame answered %v", err)
			}
			a.Initialize()
			hwm := peakRSS(t, a.Cmd.Process.Pid)
			t.Logf("peak RSS after an 80 MiB frame: %d MiB", hwm>>20)
			if hwm > 256<<20 {
				t.Fatalf("peak RSS %d MiB: the frame was buffered whole", hwm>>20)
			}
		})
	}
}

// peakRSS reads a process's high-water resident set size.
func peakRSS(t testing.TB, pid int) int64 { return procStatus(t, pid, "VmHWM") }

// procStatus reads one size field (kB) of /proc/PID/status, in bytes.
func procStatus(t testing.TB, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field+":") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc status", field)
	return 0
}
