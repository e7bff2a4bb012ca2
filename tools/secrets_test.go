package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/testfs"
	"github.com/bridle-dev/bridle/redact"
	"github.com/bridle-dev/bridle/sandbox/box"
)

// Planted secrets, assembled at run time so that scanners do not flag the
// source.
var (
	envSecret    = "envsecret-" + "Q7x9Lm2Pz4"
	dotenvSecret = "dotenvpw-" + "K3j8Hq1Vb6"
	fileToken    = "ghp_" + strings.Repeat("Zq7", 12)
	outputKey    = "AKIA" + "Z7XQ4M2N8P6R3T5V"
	pem          = "-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAA\nQyNTUxOQAAACDxwV9t3j\n-----END OPENSSH " + "PRIVATE KEY-----\n"
	allSecrets   = []string{envSecret, dotenvSecret, fileToken, outputKey, "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAA", "QyNTUxOQAAACDxwV9t3j"}
)

func secretEnv(t *testing.T) (*Env, *RunCommand) {
	t.Helper()
	env := testEnv(t)
	ws := env.Root.Dir()
	environ := append(os.Environ(), "MY_SERVICE_TOKEN="+envSecret)
	env.Redactor = redact.New(environ)
	testfs.Write(t, filepath.Join(ws, ".env"), "DB_PASSWORD="+dotenvSecret+"\n")
	env.Redactor.LoadDotEnvFiles(ws)
	testfs.Write(t, filepath.Join(ws, "config.yaml"), "github: "+fileToken+"\nname: demo\n")
	testfs.Write(t, filepath.Join(ws, "id_ed25519"), pem)
	rc := &RunCommand{Box: box.New(box.Options{}), Caps: Caps{HeadLines: 20, HeadBytes: 4096, TailLines: 20, TailBytes: 4096}, Environ: environ}
	return env, rc
}

func assertClean(t *testing.T, where, s string) {
	t.Helper()
	for _, sec := range allSecrets {
		if strings.Contains(s, sec) {
			t.Errorf("%s leaks %q:\n%s", where, sec, s)
		}
	}
}

func TestSecretsNeverLeaveTheBox(t *testing.T) {
	env, rc := secretEnv(t)
	cmds := []string{
		`env`, // the secret variable is not even passed
		`echo "$MY_SERVICE_TOKEN"`,
		`cat .env config.yaml id_ed25519`,
		`printf 'key=%s\n' ` + outputKey,
		// A long output, so the secrets land in the spilled artifact.
		`for i in $(seq 1 300); do echo "line $i"; done; cat .env config.yaml id_ed25519; printf '%s\n' ` + outputKey + `; for i in $(seq 1 300); do echo "tail $i"; done`,
		// The secret passed in through the workspace and echoed back.
		`echo ` + envSecret,
	}
	for i, c := range cmds {
		env.Key = fmt.Sprintf("s/%d/0", 10+i)
		in, _ := json.Marshal(map[string]string{"command": c})
		res := rc.Run(t.Context(), env, in)
		assertClean(t, "run_command "+c, res.Output)
		if res.Artifact != "" {
			data, err := env.Artifacts.Read(res.Artifact)
			if err != nil {
				t.Fatal(err)
			}
			assertClean(t, "artifact of "+c, string(data))
			if !strings.Contains(string(data), "REDACTED") {
				t.Errorf("artifact of %q holds no redaction marker", c)
			}
		}
	}
	for _, c := range []struct{ tool, input string }{
		{"read_file", `{"path": ".env"}`},
		{"read_file", `{"path": "config.yaml"}`},
		{"read_file", `{"path": "id_ed25519"}`},
		{"read_file", `{"path": "id_ed25519", "offset": 2}`},
		{"grep", `{"pattern": "."}`},
		{"grep", `{"pattern": "^Qy"}`},
	} {
		res := call(t, byName(c.tool), env, c.input)
		assertClean(t, c.tool+" "+c.input, res.Output)
	}
	// An edit of a file holding a secret shows it redacted in the diff.
	res := call(t, byName("edit_file"), env, `{"path": "config.yaml", "old_string": "name: demo", "new_string": "name: prod"}`)
	if res.IsError {
		t.Fatal(res.Output)
	}
	assertClean(t, "edit diff", *res.Diff.OldText+res.Diff.NewText+res.Output)
	if b, _ := os.ReadFile(filepath.Join(env.Root.Dir(), "config.yaml")); !strings.Contains(string(b), fileToken) {
		t.Fatal("the edit wrote the redaction marker into the file")
	}
}

func TestRunCommandResult(t *testing.T) {
	env, rc := secretEnv(t)
	res := rc.Run(t.Context(), env, json.RawMessage(`{"command": "echo hi; exit 4", "description": "say hi"}`))
	if !res.IsError || !strings.Contains(res.Output, "hi\n[exit status 4]") {
		t.Fatalf("result: %q", res.Output)
	}
	p, _ := rc.Preview(context.Background(), env, json.RawMessage(`{"command": "echo hi", "description": "say hi"}`))
	if p.Title != "say hi" || p.Command != "echo hi" {
		t.Fatalf("preview %+v", p)
	}
	res = rc.Run(t.Context(), env, json.RawMessage(`{"command": "sleep 5", "timeout_seconds": 1}`))
	if !res.IsError || !strings.Contains(res.Output, "timed out after 1s") {
		t.Fatalf("timeout: %q", res.Output)
	}
	os.Mkdir(filepath.Join(env.Root.Dir(), "sub"), 0o755)
	res = rc.Run(t.Context(), env, json.RawMessage(`{"command": "pwd; touch made-here", "workdir": "sub"}`))
	if res.IsError || !strings.Contains(res.Output, filepath.Join(env.Root.Dir(), "sub")) {
		t.Fatalf("workdir: %q", res.Output)
	}
	if res := rc.Run(t.Context(), env, json.RawMessage(`{"command": "true", "workdir": "../"}`)); !res.IsError {
		t.Fatalf("workdir outside accepted: %q", res.Output)
	}
	// Missing layers are named in the result, never skipped silently.
	fb := &RunCommand{Box: box.New(box.Options{NoNamespaces: true, NoSeccomp: true}), Caps: rc.Caps}
	res = fb.Run(t.Context(), env, json.RawMessage(`{"command": "true"}`))
	if !strings.Contains(res.Output, "[sandbox layers missing on this machine: namespaces") || !strings.Contains(res.Output, "seccomp") || len(res.Missing) < 2 {
		t.Fatalf("missing layers not reported: %q", res.Output)
	}
}

func TestCommandOutputCapped(t *testing.T) {
	env, rc := secretEnv(t)
	env.Key = "s/42/1"
	res := rc.Run(t.Context(), env, json.RawMessage(`{"command": "seq 1 100000"}`))
	if res.Artifact != "a42.1" || res.Lines != 100001 && res.Lines != 100000 {
		t.Fatalf("artifact %q lines %d", res.Artifact, res.Lines)
	}
	want := fmt.Sprintf("[%d lines, %d bytes; showing the first 20 and the last 20 lines; read_artifact a42.1 for the rest]", 100000, 588895)
	if !strings.Contains(res.Output, want) || !strings.HasPrefix(res.Output, "1\n2\n") || !strings.Contains(res.Output, "99999\n100000\n[exit status 0]") {
		t.Fatalf("capped output: %q", res.Output)
	}
	data, _ := env.Artifacts.Read("a42.1")
	if len(data) != 588895 {
		t.Fatalf("artifact holds %d bytes", len(data))
	}
}
