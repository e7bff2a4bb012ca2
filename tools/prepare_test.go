package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/testfs"
	"github.com/bridle-dev/bridle/permission"
)

// TestPrepare: one call to Prepare looks the tool up, asks for the Env
// only for a tool the mode offers, validates once, previews, and says
// what the mode alone decides; each failure is told apart.
func TestPrepare(t *testing.T) {
	base := testEnv(t)
	testfs.Write(t, filepath.Join(base.Root.Dir(), "a.txt"), "one\ntwo\n")
	errEnv := errors.New("no env")
	for _, tc := range []struct {
		name        string
		mode        permission.Mode
		tool, input string
		envErr      error
		wantEnv     bool   // the Env was asked for
		wantErr     string // in the error; "" for a prepared call
		notOffered  bool
		verdict     permission.Decision
		title       string // in the preview
	}{
		{name: "read", mode: permission.ModeAsk, tool: "read_file", input: `{"path":"a.txt"}`, wantEnv: true, verdict: permission.Allow, title: "a.txt"},
		{name: "edit asks", mode: permission.ModeAsk, tool: "edit_file", input: `{"path":"a.txt","old_string":"one","new_string":"uno"}`,
			wantEnv: true, verdict: permission.Ask, title: "a.txt"},
		{name: "edit in full-auto", mode: permission.ModeFullAuto, tool: "edit_file", input: `{"path":"a.txt","old_string":"one","new_string":"uno"}`,
			wantEnv: true, verdict: permission.Allow, title: "a.txt"},
		{name: "not in the mode", mode: permission.ModeReadOnly, tool: "edit_file", input: `{}`, wantErr: "not available in read-only mode", notOffered: true},
		{name: "no such tool", mode: permission.ModeAsk, tool: "nope", input: `{}`, wantErr: `tool "nope" is not available`, notOffered: true},
		{name: "env fails", mode: permission.ModeAsk, tool: "read_file", input: `{"path":"a.txt"}`, envErr: errEnv, wantEnv: true, wantErr: "no env"},
		{name: "bad input", mode: permission.ModeAsk, tool: "read_file", input: `{"path":5}`, wantEnv: true, wantErr: "path"},
		{name: "preview refuses", mode: permission.ModeAsk, tool: "grep", input: `{"pattern":"a(("}`, wantEnv: true, wantErr: "not a valid RE2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry(tc.mode, tools())
			asked := false
			call, err := r.Prepare(context.Background(), tc.tool, json.RawMessage(tc.input), func() (*Env, error) {
				asked = true
				return base.ForCall("s/1/0"), tc.envErr
			})
			if asked != tc.wantEnv {
				t.Errorf("Env asked for: %v, want %v", asked, tc.wantEnv)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
				}
				if errors.Is(err, ErrNotOffered) != tc.notOffered {
					t.Errorf("errors.Is(err, ErrNotOffered) = %v, want %v", !tc.notOffered, tc.notOffered)
				}
				if tc.envErr != nil && !errors.Is(err, tc.envErr) {
					t.Errorf("the Env's error was not returned as it is: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if call.Tool.Name() != tc.tool || call.Effect != call.Tool.Effect() || call.Verdict != tc.verdict {
				t.Errorf("call = %s effect %v verdict %v, want %s effect %v verdict %v", call.Tool.Name(), call.Effect, call.Verdict,
					tc.tool, call.Tool.Effect(), tc.verdict)
			}
			if !strings.Contains(call.Preview.Title, tc.title) {
				t.Errorf("preview title %q, want it to name %q", call.Preview.Title, tc.title)
			}
		})
	}
}

// TestCallRun: Run plans a prepared edit before it hands the call on
// (its file's hashes: the preview's plan, while the file is unchanged)
// and runs the tool only when around says so; a tool that does not edit
// has no plan, and a cacheable one says what it reads; an edit planned
// on text that is gone is ErrNotApplied and does not reach around.
func TestCallRun(t *testing.T) {
	base := testEnv(t)
	path := filepath.Join(base.Root.Dir(), "a.txt")
	testfs.Write(t, path, "one\ntwo\n")
	r := NewRegistry(permission.ModeFullAuto, tools())
	env := base.ForCall("s/1/0")
	ctx := context.Background()
	edit, err := r.Prepare(ctx, "edit_file", json.RawMessage(`{"path":"a.txt","old_string":"one","new_string":"uno"}`), func() (*Env, error) { return env, nil })
	if err != nil {
		t.Fatal(err)
	}
	if edit.Name != "edit_file" || edit.Mode != permission.ModeFullAuto || edit.Cacheable {
		t.Errorf("prepared edit = %s in %s, cacheable %v: want edit_file in full-auto, not cacheable", edit.Name, edit.Mode, edit.Cacheable)
	}
	err = edit.Run(ctx, env, func(func() Result) error {
		fe := edit.Plan
		if fe == nil || fe.Path != path || fe.Before == "" || fe.After == "" || fe.Before == fe.After {
			t.Fatalf("Plan = %+v: want the file's hashes before and after", fe)
		}
		return nil // not run
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "one\ntwo\n" {
		t.Errorf("the edit ran though around did not run it: %q, %v", got, err)
	}

	read := CallOf(ReadFile{}, json.RawMessage(`{"path":"a.txt"}`))
	var res Result
	if err := read.Run(ctx, env, func(run func() Result) error { res = run(); return nil }); err != nil {
		t.Fatal(err)
	}
	if read.Plan != nil || !read.Cacheable || read.Volatile || len(read.Deps) != 1 || read.Deps[0].Path != path || read.Deps[0].Tree {
		t.Errorf("a read's plan %+v, cacheable %v, volatile %v, deps %+v: want no plan, cacheable, its file", read.Plan, read.Cacheable, read.Volatile, read.Deps)
	}
	if res.IsError || !strings.Contains(res.Output, "two") {
		t.Errorf("run = %+v: want the file", res)
	}

	testfs.Write(t, path, "two\n")
	err = edit.Run(ctx, env, func(func() Result) error {
		t.Errorf("an edit planned on text that is gone reached around")
		return nil
	})
	if !errors.Is(err, ErrNotApplied) {
		t.Errorf("an edit planned on text that is gone: Run = %v, want ErrNotApplied", err)
	}
}
