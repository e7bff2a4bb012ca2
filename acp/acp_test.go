package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The generated file is the generator's output for the vendored schema:
// regenerate and compare, so neither drifts from the other.
func TestTypesAreGeneratedFromTheSchema(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator")
	}
	out := filepath.Join(t.TempDir(), "types_gen.go")
	cmd := exec.Command("go", "run", "../internal/acpgen", "-schema", "../testdata/acp/schema.unstable.json", "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("acpgen: %v\n%s", err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("types_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("types_gen.go differs from what internal/acpgen writes for testdata/acp/schema.unstable.json; run go generate ./acp")
	}
}

func TestUnionsReadAndWriteTheirDiscriminator(t *testing.T) {
	for _, raw := range []string{
		`{"type":"text","text":"hi"}`,
		`{"type":"resource","resource":{"uri":"file:///a","text":"x"}}`,
		`{"type":"resource_link","name":"a","uri":"file:///a"}`,
	} {
		var b ContentBlock
		if err := json.Unmarshal([]byte(raw), &b); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		out, _ := json.Marshal(b)
		if !sameJSON(t, out, []byte(raw)) {
			t.Errorf("%s came back as %s", raw, out)
		}
	}
	var b ContentBlock
	var ue *UnionError
	if err := json.Unmarshal([]byte(`{"text":"no type"}`), &b); !errors.As(err, &ue) || ue.Field != "type" {
		t.Errorf("a block without type: %v", err)
	}
	if err := json.Unmarshal([]byte(`{"type":"video"}`), &b); !errors.As(err, &ue) || ue.Value != "video" {
		t.Errorf("a block of an unknown type: %v", err)
	}

	// A variant without the discriminator is the default (stdio).
	var m MCPServer
	if err := json.Unmarshal([]byte(`{"name":"fs","command":"x","args":[],"env":[]}`), &m); err != nil || m.Stdio == nil || m.Stdio.Command != "x" {
		t.Errorf("stdio server: %+v %v", m, err)
	}
	if err := json.Unmarshal([]byte(`{"type":"http","name":"h","url":"http://x","headers":[]}`), &m); err != nil || m.HTTP == nil || m.Stdio != nil {
		t.Errorf("http server: %+v %v", m, err)
	}

	up := SessionNotification{SessionID: "s", Update: SessionUpdate{AgentMessageChunk: &ContentChunk{Content: ContentBlock{Text: &TextContent{Text: "a"}}}}}
	out, _ := json.Marshal(up)
	if !sameJSON(t, out, []byte(`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}`)) {
		t.Errorf("update: %s", out)
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
