package event

import (
	"reflect"
	"strings"
	"testing"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	old := "a"
	payloads := []Payload{
		SessionStarted{Cwd: "/w", Model: "scripted/demo", Mode: "ask"},
		UserMessage{Content: []Content{{Type: "text", Text: "hi"}}},
		AssistantMessage{Text: "t", ToolCalls: []ToolCall{{ID: "1", Name: "read_file", Input: []byte(`{"path":"a"}`)}}},
		ToolStarted{CallID: "1", Key: "s/2/0", Name: "read_file", Input: []byte(`{}`), BeforeHash: "x"},
		ToolResult{CallID: "1", Key: "s/2/0", Output: "o", Status: "completed", Diff: &Diff{Path: "a", OldText: &old, NewText: "b"}},
		ApprovalGranted{Tool: "edit_file", Scope: "session", Pattern: "src/**"},
		Compaction{Through: 9, Summary: "s", Goal: "g", Constraints: []string{"c"}},
		ContextAssembled{Window: 100, FixedPrefix: 1, TaskPins: 2, History: 3, ToolOutputs: 4, Slack: 5},
		ProviderError{Provider: "p", ErrKind: "overloaded", Status: 529, Final: true},
		PlanUpdated{Entries: []PlanEntry{{Content: "read", Status: "completed"}, {Content: "fix", Status: "in_progress"}}},
	}
	for _, p := range payloads {
		b, err := Encode(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), `{"v":1,`) {
			t.Errorf("%s encoded without its version: %s", p.Kind(), b)
		}
		got, err := Decode(p.Kind(), b)
		if err != nil {
			t.Fatalf("%s: %v", p.Kind(), err)
		}
		// Decoding sets V; compare with it stamped.
		want := reflect.ValueOf(p)
		wantCopy := reflect.New(want.Type()).Elem()
		wantCopy.Set(want)
		wantCopy.FieldByName("V").SetInt(Version)
		if !reflect.DeepEqual(got, wantCopy.Interface()) {
			t.Errorf("%s: round trip gave %#v, want %#v", p.Kind(), got, wantCopy.Interface())
		}
	}
}

func TestDecodeRefusesWhatItCannotRead(t *testing.T) {
	if _, err := Decode("teleported", []byte(`{"v":1}`)); err == nil || !strings.Contains(err.Error(), "newer bridle") {
		t.Errorf("unknown kind: %v", err)
	}
	if _, err := Decode(KindUserMessage, []byte(`{"v":2,"content":[]}`)); err == nil || !strings.Contains(err.Error(), "upgrade bridle") {
		t.Errorf("newer version: %v", err)
	}
	if _, err := Decode(KindUserMessage, []byte(`{"v":2,"content":"reshaped"}`)); err == nil || !strings.Contains(err.Error(), "upgrade bridle") {
		t.Errorf("newer version that does not fit this one's type: %v", err)
	}
	if _, err := Decode(KindUserMessage, []byte(`{"v":1,"content":"nope"}`)); err == nil {
		t.Errorf("a malformed payload decoded")
	}
}

func TestToolResultLineNamesWhatACommandChanged(t *testing.T) {
	cases := []struct {
		changed []FileChange
		want    string
	}{
		{nil, `run_command completed key=k: "ok"`},
		{[]FileChange{{Path: "/w/a"}}, `run_command completed key=k: "ok" changed 1 file(s): a`},
		{[]FileChange{{Path: "/w/a"}, {Path: "/w/b"}, {Path: "/w/c"}, {Path: "/w/d/e"}}, `run_command completed key=k: "ok" changed 4 file(s): a, b, c, …`},
	}
	for _, c := range cases {
		got := ToolResult{Name: "run_command", Status: "completed", Key: "k", Output: "ok", Changed: c.changed}.Line()
		if got != c.want {
			t.Errorf("Line() = %s\nwant      %s", got, c.want)
		}
	}
}
