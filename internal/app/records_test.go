package app

import (
	"slices"
	"testing"

	"github.com/bridle-dev/bridle/store"
)

// TestSessionTree puts each subagent's session and each fork right after
// the session it came from, keeping the list's order (newest first)
// among siblings; one whose origin is not listed stays where it was.
func TestSessionTree(t *testing.T) {
	for _, c := range []struct {
		name string
		rows []store.Session
		want []string
	}{
		{"flat", []store.Session{{ID: "b"}, {ID: "a"}}, []string{"b", "a"}},
		{"child after parent", []store.Session{{ID: "c", ParentID: "a"}, {ID: "b"}, {ID: "a"}}, []string{"b", "a", "c"}},
		{"fork after origin, then its child", []store.Session{{ID: "f2", ForkOf: "a"}, {ID: "k", ParentID: "f2"}, {ID: "f1", ForkOf: "a"}, {ID: "a"}},
			[]string{"a", "f2", "k", "f1"}},
		{"origin not listed", []store.Session{{ID: "x", ParentID: "gone"}, {ID: "a"}}, []string{"x", "a"}},
	} {
		var got []string
		for _, r := range SessionTree(c.rows) {
			got = append(got, r.ID)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: SessionTree = %q, want %q", c.name, got, c.want)
		}
	}
}
