//go:build unix

package e2e

import (
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// A command in the background is stopped when the session is switched to
// read-only mode, which promises no writes, and at the start of a rewind,
// which would otherwise have files it puts back written over. Each stop
// is recorded (command_finished, stopped) and told to the user.

// loopCommand rewrites file every 200 ms, forever; marker names its shell
// among the machine's processes.
func loopCommand(file, marker string) string {
	return fmt.Sprintf(`while :; do echo "loop $$ $(date +%%s%%N)" > %s; sleep 0.2; done # %s`, file, marker)
}

// stoppedFor checks that the session's one background command is recorded
// as stopped, its summary saying why.
func stoppedFor(t *testing.T, a *acptest.Agent, sid, why string) {
	t.Helper()
	ended := eventsOf(acptest.Log(t, a.DB, sid), "command_finished")
	if len(ended) != 1 || ended[0]["status"] != "stopped" || !strings.Contains(ended[0]["summary"].(string), why) {
		t.Errorf("command_finished: %v, want one, stopped, saying %q", ended, why)
	}
}

func TestBackgroundCommandStoppedByReadOnlyMode(t *testing.T) {
	marker := fmt.Sprintf("bridle-bg-readonly-%d", os.Getpid())
	a, sid, ws := serve(t, acptest.Options{Model: acptest.Scenario(t, bgScenario(loopCommand("clock.txt", marker)))}, nil)
	waitFor(t, func() bool { return processesWith(marker) == 1 })
	waitFor(t, func() bool { _, err := os.Stat(ws + "/clock.txt"); return err == nil })
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "read-only"}, nil)
	// The answer comes once the commands are stopped and recorded.
	if n := processesWith(marker); n != 0 {
		t.Fatalf("the background command still runs in read-only mode (%d processes)", n)
	}
	stoppedFor(t, a, sid, "read-only")
	if s := agentText(a, sid); !strings.Contains(s, "read-only mode: stopped what ran in the background (bg1)") {
		t.Errorf("the user is not told the command was stopped; the agent said:\n%s", s)
	}
	a.AssertValid(t)
}

func TestBackgroundCommandStoppedBeforeARewind(t *testing.T) {
	for _, mode := range []string{"watch", "scan"} {
		t.Run(mode, func(t *testing.T) {
			settings, _ := userSettings(t, fmt.Sprintf(`{"sandbox": {"command": {"checkpoint": %q}}}`, mode))
			marker := fmt.Sprintf("bridle-bg-rewind-%s-%d", mode, os.Getpid())
			a, sid, ws := serve(t, acptest.Options{Model: acptest.Scenario(t, bgScenario(loopCommand("notes.txt", marker))), Env: []string{settings}},
				map[string]string{"notes.txt": "mine\n"})
			waitFor(t, func() bool { return strings.HasPrefix(readFile(t, ws, "notes.txt"), "loop ") })
			if stop := a.Prompt(sid, "/rewind 1"); stop != "end_turn" {
				t.Fatalf("/rewind 1: %s", stop)
			}
			// The box is gone before the files were put back: nothing
			// rewrites them after.
			if n := processesWith(marker); n != 0 {
				t.Fatalf("the background command still runs after the rewind (%d processes)", n)
			}
			if got := readFile(t, ws, "notes.txt"); got != "mine\n" {
				t.Errorf("notes.txt after the rewind: %q, want it as before prompt 1", got)
			}
			stoppedFor(t, a, sid, "rewinding")
			if s := agentText(a, sid); !strings.Contains(s, "rewind: stopped what ran in the background (bg1)") {
				t.Errorf("the user is not told the command was stopped; the agent said:\n%s", s)
			}
			a.AssertValid(t)
		})
	}
}

// A session/cancel is a notification, handled where the connection's
// other messages are read: it must not hold them while the session's
// background commands die and their ends are recorded. The test holds
// the database's write lock, so the end of the cancelled command cannot
// be recorded; a request sent after the cancel is still answered, and
// the end is recorded once the lock is let go. bridle gives a stop up to
// 10 s (stopWait) to be recorded, so a bridle that waited would answer
// only then: the answer is awaited for half of that.
func TestCancelDoesNotHoldTheConnectionWhileBackgroundCommandsStop(t *testing.T) {
	marker := fmt.Sprintf("bridle-bg-cancel-lock-%d", os.Getpid())
	a, sid, _ := serve(t, acptest.Options{Model: acptest.Scenario(t, bgScenario(fmt.Sprintf(`sleep 305 # %s`, marker)))}, nil)
	waitFor(t, func() bool { return processesWith(marker) == 1 })

	db, err := sql.Open("sqlite", a.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatalf("taking the database's write lock: %v", err)
	}
	locked := true
	unlock := func() {
		if locked {
			locked = false
			if _, err := conn.ExecContext(t.Context(), "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer unlock()

	a.Notify("session/cancel", map[string]string{"sessionId": sid})
	// Any request will do: one bridle answers without the database.
	_, answer := a.Request("bridle/no_such_method", map[string]any{})
	m, err := a.Conn.Wait(answer, 5*time.Second)
	if err != nil {
		t.Fatalf("a request sent after session/cancel was not answered while the cancelled command's end waited to be recorded: %v", err)
	}
	if m.Error == nil || m.Error.Code != -32601 {
		t.Errorf("the request's answer: %+v, want method not found", m)
	}
	if n := len(eventsOf(acptest.Log(t, a.DB, sid), "command_finished")); n != 0 {
		t.Fatalf("%d command_finished recorded while the database was locked", n)
	}
	unlock()
	waitFor(t, func() bool { return len(eventsOf(acptest.Log(t, a.DB, sid), "command_finished")) == 1 })
	if n := processesWith(marker); n != 0 {
		t.Errorf("the background command still runs after the cancel (%d processes)", n)
	}
	stoppedFor(t, a, sid, "cancelled")
}
