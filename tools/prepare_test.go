package tools

import (
	"context"
	"encoding/json"
	"errors"
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

// TestCallPlan: a prepared edit's Plan is its file's hashes (the
// preview's plan, while the file is unchanged); a tool that does not
// edit has none.
func TestCallPlan(t *testing.T) {
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
	fe, err := edit.Plan(ctx, env)
	if err != nil || fe == nil || fe.Path != path || fe.Before == "" || fe.After == "" || fe.Before == fe.After {
		t.Fatalf("Plan = %+v, %v: want the file's hashes before and after", fe, err)
	}
	read := CallOf(ReadFile{}, json.RawMessage(`{"path":"a.txt"}`))
	if fe, err := read.Plan(ctx, env); fe != nil || err != nil {
		t.Errorf("a read's Plan = %+v, %v: want none", fe, err)
	}
	testfs.Write(t, path, "two\n")
	if _, err := edit.Plan(ctx, env); err == nil {
		t.Errorf("an edit planned on text that is gone still plans")
	}
}
