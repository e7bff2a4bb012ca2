package session

import (
	"testing"

	"github.com/bridle-dev/bridle/permission"
)

// The modes offered to the editor are permission's, in its order, each
// with the name and description the editor shows.
func TestModesAreTheOnesSetModeTakes(t *testing.T) {
	got := (&Manager{}).Modes()
	want := permission.Modes()
	if len(got) != len(want) {
		t.Fatalf("%d modes offered, want %d", len(got), len(want))
	}
	for i, m := range got {
		if m.ID != string(want[i].ID) || m.Name != want[i].Name || m.Description == nil || *m.Description != want[i].Description {
			t.Errorf("mode %d = %+v, want %+v", i, m, want[i])
		}
		if _, err := permission.ParseMode(m.ID); err != nil {
			t.Errorf("mode %q is offered but not taken: %v", m.ID, err)
		}
	}
}
