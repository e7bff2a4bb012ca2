package tools

import (
	"testing"

	"github.com/bridle-dev/bridle/sandbox/box"
)

// A command starting now reaches the loopbacks of the session's running
// commands only: not of those that ended, nor of one whose box has not
// given its loopback yet. A session without background commands (a
// subagent's: nil) reaches none.
func TestBackgroundReach(t *testing.T) {
	b := &Background{}
	running, ended, starting := &box.Loopback{}, &box.Loopback{}, (*box.Loopback)(nil)
	for _, c := range []struct {
		id    string
		ended bool
		loop  *box.Loopback
	}{{"bg1", false, running}, {"bg2", true, ended}, {"bg3", false, starting}} {
		fakeCommand(b, c.id, c.ended).loop = c.loop
	}
	if got := b.Reach(); len(got) != 1 || got[0] != running {
		t.Errorf("Reach = %v, want only bg1's", got)
	}
	if got := (*Background)(nil).Reach(); got != nil {
		t.Errorf("a nil Background reaches %v", got)
	}
}
