package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bridle-dev/bridle/internal/testfs"
	"github.com/bridle-dev/bridle/permission"
)

// TestCallValidatesOnce: within one call's Env the input is validated
// once, by the registry, however many of Preview, Plan and Run follow;
// a call without ForCall still validates on its own.
func TestCallValidatesOnce(t *testing.T) {
	base := testEnv(t)
	testfs.Write(t, filepath.Join(base.Root.Dir(), "a.txt"), "one\ntwo\n")
	r := NewRegistry(permission.ModeFullAuto, tools())
	tl, _ := r.Get("edit_file")
	in := json.RawMessage(`{"path":"a.txt","old_string":"one","new_string":"uno"}`)

	env := base.ForCall("s/1/0")
	n := validations.Load()
	if err := r.CheckCall(env, tl, in); err != nil {
		t.Fatal(err)
	}
	if _, err := tl.Preview(context.Background(), env, in); err != nil {
		t.Fatal(err)
	}
	if _, err := tl.(Planner).Plan(context.Background(), env, in); err != nil {
		t.Fatal(err)
	}
	if res := tl.Run(context.Background(), env, in); res.IsError {
		t.Fatal(res.Output)
	}
	if got := validations.Load() - n; got != 1 {
		t.Errorf("%d validations in one call, want 1", got)
	}

	n = validations.Load()
	bad := json.RawMessage(`{"path":"a.txt","old_string":"uno","new_string":"one","bogus":1}`)
	if res := tl.Run(context.Background(), base, bad); !res.IsError {
		t.Errorf("a call without the registry ran with an unknown field: %s", res.Output)
	}
	if validations.Load()-n != 1 {
		t.Errorf("a call without the registry was not validated")
	}
}

// TestCallPlansOnce: Preview, Plan and Run of one call share one plan
// (the same diff), and Run applies it.
func TestCallPlansOnce(t *testing.T) {
	base := testEnv(t)
	path := filepath.Join(base.Root.Dir(), "a.txt")
	testfs.Write(t, path, "one\ntwo\n")
	for _, tc := range []struct{ tool, input, want string }{
		{"edit_file", `{"path":"a.txt","old_string":"one","new_string":"uno"}`, "uno\ntwo\n"},
		{"write_file", `{"path":"a.txt","content":"three\n"}`, "three\n"},
	} {
		tl := byName(tc.tool)
		in := json.RawMessage(tc.input)
		env := base.ForCall("s/1/" + tc.tool)
		p, err := tl.Preview(context.Background(), env, in)
		if err != nil {
			t.Fatal(err)
		}
		fe, err := tl.(Planner).Plan(context.Background(), env, in)
		if err != nil {
			t.Fatal(err)
		}
		res := tl.Run(context.Background(), env, in)
		if res.IsError {
			t.Fatal(res.Output)
		}
		if p.Diff == nil || p.Diff != fe.Diff || res.Diff != fe.Diff {
			t.Errorf("%s: the preview, the plan and the run have different diffs", tc.tool)
		}
		if b, _ := os.ReadFile(path); string(b) != tc.want {
			t.Errorf("%s: file = %q, want %q", tc.tool, b, tc.want)
		}
		if h, _ := HashFile(context.Background(), base, "a.txt"); h != fe.After {
			t.Errorf("%s: the file's hash is not the plan's After", tc.tool)
		}
	}
}

// TestCallReplansAfterChange: a file changed between the preview (the
// question to the user) and the run is planned again, never overwritten
// from the stale plan.
func TestCallReplansAfterChange(t *testing.T) {
	base := testEnv(t)
	path := filepath.Join(base.Root.Dir(), "a.txt")
	testfs.Write(t, path, "one\ntwo\n")
	tl := byName("edit_file")
	in := json.RawMessage(`{"path":"a.txt","old_string":"one","new_string":"uno"}`)
	env := base.ForCall("s/1/0")
	p, err := tl.Preview(context.Background(), env, in)
	if err != nil {
		t.Fatal(err)
	}
	testfs.Write(t, path, "one\ntwo\nthree\n") // the user edits meanwhile
	fe, err := tl.(Planner).Plan(context.Background(), env, in)
	if err != nil {
		t.Fatal(err)
	}
	if fe.Diff == p.Diff {
		t.Error("a stale plan was kept")
	}
	if res := tl.Run(context.Background(), env, in); res.IsError {
		t.Fatal(res.Output)
	}
	if b, _ := os.ReadFile(path); string(b) != "uno\ntwo\nthree\n" {
		t.Errorf("file = %q: the user's change was lost", b)
	}
}

// incomparable is a tool whose value cannot be compared.
type incomparable struct {
	Remember
	tags []string
}

// TestRegistriesCached: one registry per mode and tool set; a changed
// set or mode builds another.
func TestRegistriesCached(t *testing.T) {
	var c Registries
	set := tools()
	r1 := c.Get(permission.ModeAsk, set)
	if c.Get(permission.ModeAsk, slices.Clone(set)) != r1 {
		t.Error("the same mode and tools built a second registry")
	}
	if c.Get(permission.ModeAsk, tools()) == r1 {
		t.Error("a new run_command (other settings, another box) got the old registry")
	}
	r1 = c.Get(permission.ModeAsk, set)
	if r2 := c.Get(permission.ModeReadOnly, set); r2 == r1 || len(r2.Tools()) >= len(r1.Tools()) {
		t.Error("read-only got the ask registry")
	}
	if c.Get(permission.ModeAsk, set) != r1 {
		t.Error("switching mode back rebuilt the registry")
	}
	if c.Get(permission.ModeAsk, set[:3]) == r1 {
		t.Error("a smaller tool set got the old registry")
	}
	odd := append(tools(), incomparable{})
	if a, b := c.Get(permission.ModeAsk, odd), c.Get(permission.ModeAsk, odd); a == b {
		t.Error("a tool that cannot be compared was taken as unchanged")
	}
}
