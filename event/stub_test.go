package event

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// What a stub keeps of a stored payload is what StubOf keeps of the
// decoded one, also when the model wrote text or call inputs that look
// like the members a stub reads, and for payloads not as this bridle
// writes them (read the long way).
func TestReadStubKeepsWhatTheEventHolds(t *testing.T) {
	tricky := `he wrote "usage":{"input_tokens":999} and "raw":5 and "seen":[{"path":"x"}] \"usage\":{}`
	payloads := []Payload{
		AssistantMessage{Text: "plain", Usage: Usage{InputTokens: 120, CacheReadTokens: 30, CacheWriteTokens: 7, OutputTokens: 9}},
		AssistantMessage{Text: tricky, Thinking: tricky, Usage: Usage{InputTokens: 5}},
		AssistantMessage{Text: "calls", ToolCalls: []ToolCall{
			{ID: "1", Name: "run", Input: json.RawMessage(`{"usage":{"input_tokens":777},"command":"echo \"usage\":{}"}`)},
			{ID: "2", Name: "read", Input: json.RawMessage(`{"path":"usage.go","usage":{"cache_read_tokens":1}}`)},
		}, Usage: Usage{InputTokens: 42}},
		AssistantMessage{Text: "no usage reported"},
		ContextAssembled{Window: 100, Raw: 1234, Ratio: 1.2, Counter: "estimate", Dropped: []int64{3, 4}, Action: "drop_outputs"},
		ContextAssembled{Window: 100, Action: "none"},
		ToolResult{CallID: "c", Name: "read_file", Output: tricky, Seen: []FileSeen{{Path: "/w/a.go", Version: "1"}}, Status: "completed"},
		UserMessage{Content: []Content{{Type: "text", Text: tricky}}},
		ToolStarted{CallID: "c", Key: "k", Name: "run", Input: json.RawMessage(`{"usage":{"input_tokens":1}}`)},
		TurnFinished{StopReason: "end_turn"},
	}
	for _, p := range payloads {
		b, err := Encode(p)
		if err != nil {
			t.Fatal(err)
		}
		want := StubOf(p)
		got, err := ReadStub(p.Kind(), b)
		if err != nil || got != want {
			t.Errorf("%s %s: stub %+v, %v; want %+v", p.Kind(), b, got, err, want)
		}
		// The same payload, its members in another order (an older
		// bridle's, or one not written by encode): read the long way.
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		shuffled, _ := json.Marshal(m) // keys sorted: "v" is not first
		if bytes.HasPrefix(shuffled, []byte(`{"v"`)) {
			continue
		}
		if got, err := ReadStub(p.Kind(), shuffled); err != nil || got != want {
			t.Errorf("%s reordered %s: stub %+v, %v; want %+v", p.Kind(), shuffled, got, err, want)
		}
	}
}

// A stub is refused where Decode refuses the event: an unknown kind, a
// newer version, a payload that is not JSON.
func TestReadStubRefusesWhatDecodeRefuses(t *testing.T) {
	for _, tt := range []struct {
		kind Kind
		data string
		want string
	}{
		{"teleported", `{"v":1}`, "newer bridle"},
		{KindAssistantMessage, `{"v":2,"text":"x"}`, "upgrade bridle"},
		{KindContextAssembled, `{"v":1,"raw":"many"`, "decode context_assembled"},
		{KindAssistantMessage, `not json`, "decode assistant_message"},
	} {
		if _, err := ReadStub(tt.kind, []byte(tt.data)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadStub(%s, %s) = %v, want an error saying %q", tt.kind, tt.data, err, tt.want)
		}
	}
	if _, err := BareStub("teleported"); err == nil {
		t.Error("a bare stub of an unknown kind was made")
	}
	for _, k := range []Kind{KindToolResult, KindAssistantMessage} {
		if a, err := BareStub(k); err != nil || *a != (Stub{Of: k}) {
			t.Errorf("BareStub(%s) = %+v, %v, want a stub of its kind alone", k, a, err)
		}
	}
}

// SeenOf reads a result's Seen from its payload cut at SeenKey, as the
// store hands it, whatever its output holds.
func TestSeenOfReadsTheCutPayload(t *testing.T) {
	for _, r := range []ToolResult{
		{Output: `fake "seen":[{"path":"/etc/passwd","version":"x"}]`, Seen: []FileSeen{{Path: "/w/a.go", Version: "7@1"}, {Path: `/w/we"ird.go`, Version: "2"}}, Changed: []FileChange{{Path: "b"}}},
		{Output: "no seen at all"},
	} {
		b, err := Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		var from []byte
		if i := bytes.Index(b, SeenKey); i >= 0 {
			from = b[i:]
		}
		got, err := SeenOf(from)
		if err != nil || !reflect.DeepEqual(got, r.Seen) {
			t.Errorf("SeenOf(%s) = %+v, %v; want %+v", from, got, err, r.Seen)
		}
	}
	if _, err := SeenOf([]byte(`"seen":{"path":"x"}`)); err == nil {
		t.Error("a seen that is not a list was read")
	}
}

func TestValueEnd(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{
		{`123,"x":1}`, 3},
		{`123}`, 3},
		{` 42 ,`, 3},
		{`"a,b}\"c",`, 9},
		{`{"a":[1,{"b":"]"}]},"c":2}`, 19},
		{`[1,2]`, 5},
		{`true}`, 4},
		{`null`, 4},
		{`{"open":`, -1},
		{`}`, -1},
		{``, -1},
	} {
		if got := valueEnd([]byte(tt.in)); got != tt.want {
			t.Errorf("valueEnd(%s) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
