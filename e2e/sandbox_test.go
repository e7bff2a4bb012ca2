package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// Planted secrets, assembled at run time so that scanners do not flag
// this file.
var (
	envSecret    = "envtok-" + "Hq4Zp8Lw2Xc6"
	dotenvSecret = "dotenvpw-" + "Rt5Ym1Kd9Sv3"
	fileToken    = "ghp_" + strings.Repeat("Wv3", 12)
	keyBody      = "b3BlbnNzaC1rZXktdjEAAAAAbm9uZQ" + "AAAAAAAAAAEAAAAzAAAAC3Nza"
	planted      = []string{envSecret, dotenvSecret, fileToken, keyBody}
)

// boxScenario reads secrets through every tool, edits a file holding one,
// sends bad arguments, pins a decision and, after the mode changes to
// read-only, tries a command.
var boxScenario = `{
  "turns": [
    {"calls": [
      {"text": "Looking.", "tool_calls": [
        {"name": "read_file", "input": {"path": ".env"}},
        {"name": "read_file", "input": {"path": "config.yaml"}},
        {"name": "grep", "input": {"pattern": "token|PASSWORD|PRIVATE"}},
        {"name": "run_command", "input": {"command": "cat .env config.yaml id_ed25519; echo \"token=$MY_SERVICE_TOKEN\"; env | sort", "description": "show the config"}},
        {"name": "run_command", "input": {"command": "seq 1 3000; cat id_ed25519 config.yaml; seq 1 3000"}},
        {"name": "edit_file", "input": {"path": "config.yaml", "old_string": "name: demo", "new_string": "name: prod"}},
        {"name": "read_file", "input": {"path": 5}},
        {"name": "run_command", "input": {"command": "sleep 1", "timeout_seconds": 10}},
        {"name": "remember", "input": {"kind": "decision", "text": "keep the token in config.yaml"}}
      ]},
      {"text": "Done."}
    ]},
    {"calls": [
      {"tool_calls": [{"name": "run_command", "input": {"command": "true"}}]},
      {"text": "Refused, as expected."}
    ]}
  ]
}`

// sessionOpened is the answer to session/new with the sandbox's report.
type sessionOpened struct {
	SessionID string `json:"sessionId"`
	Meta      struct {
		Bridle struct {
			Sandbox struct {
				Layers []struct {
					Name string `json:"name"`
					OK   bool   `json:"ok"`
				} `json:"layers"`
				Missing    []string `json:"missing"`
				Unconfined string   `json:"unconfined"`
			} `json:"sandbox"`
		} `json:"bridle"`
	} `json:"_meta"`
}

func TestBoxThroughTheBinary(t *testing.T) {
	pem := "-----BEGIN OPENSSH " + "PRIVATE KEY-----\n" + keyBody + "\n-----END OPENSSH " + "PRIVATE KEY-----\n"
	ws := acptest.Workspace(t, map[string]string{
		".env":        "DB_PASSWORD=" + dotenvSecret + "\n",
		"config.yaml": "token: " + fileToken + "\nname: demo\n",
		"id_ed25519":  pem,
		"AGENTS.md":   "Always run the tests with -count=1.\nThe deploy token is " + fileToken + "\n",
		// The project's settings add instructions of their own.
		".bridle/settings.json": `{"instructions": ["Prefer small commits."]}`,
	})
	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	// The user's settings lower the longest command time limit.
	config := t.TempDir()
	os.MkdirAll(filepath.Join(config, "bridle"), 0o755)
	os.WriteFile(filepath.Join(config, "bridle", "settings.json"), []byte(`{"sandbox": {"command": {"max_timeout_seconds": 5}}}`), 0o644)
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, boxScenario),
		Env: []string{"MY_SERVICE_TOKEN=" + envSecret, "BRIDLE_RECORD_REQUESTS=" + requests, "XDG_CONFIG_HOME=" + config}})
	a.Initialize()
	// The report is not on initialize's path: it comes with the answer
	// that opens a session.
	var opened sessionOpened
	a.MustCall("session/new", map[string]any{"cwd": ws, "mcpServers": []any{}}, &opened)
	sb := opened.Meta.Bridle.Sandbox
	if len(sb.Layers) < 6 || sb.Missing == nil {
		t.Fatalf("session/new lacks the sandbox report: %+v", opened)
	}
	sid := opened.SessionID
	if stop := a.Prompt(sid, "show me the configuration"); stop != "end_turn" {
		t.Fatalf("stopReason = %q", stop)
	}
	a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "read-only"}, nil)
	if stop := a.Prompt(sid, "run something"); stop != "end_turn" {
		t.Fatalf("second stopReason = %q", stop)
	}
	a.CloseStdin()

	// Nothing persisted or sent holds a planted secret: not the database
	// (with its WAL), not the spilled artifacts, not the provider
	// requests, not what the editor was sent.
	persisted := map[string][]byte{}
	checkpoints := filepath.Join(filepath.Dir(a.DB), "checkpoints")
	filepath.Walk(filepath.Dir(a.DB), func(p string, fi os.FileInfo, err error) error {
		switch {
		case err != nil || !fi.Mode().IsRegular():
		case strings.HasPrefix(p, checkpoints+string(filepath.Separator)):
			// A checkpoint is a file's exact content before an edit, kept
			// to put it back: it holds what the file held. It is the
			// user's alone: private, and hidden from tools and commands.
			if fi.Mode().Perm()&0o077 != 0 {
				t.Errorf("checkpoint %s is readable by others: %v", p, fi.Mode())
			}
		default:
			persisted[p], _ = os.ReadFile(p)
		}
		return nil
	})
	if fi, err := os.Stat(checkpoints); err == nil && fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("the checkpoint directory is open to others: %v", fi.Mode())
	}
	persisted[requests], _ = os.ReadFile(requests)
	var sent bytes.Buffer
	for _, m := range a.Notes() {
		sent.Write(m.Params)
	}
	for _, s := range a.Sent() {
		b, _ := json.Marshal(s)
		sent.Write(b)
	}
	persisted["sent to the editor"] = sent.Bytes()
	artifacts := 0
	for where, data := range persisted {
		if strings.Contains(where, string(filepath.Separator)+"artifacts"+string(filepath.Separator)) {
			artifacts++
		}
		for _, s := range planted {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s holds the planted secret %q", where, s)
			}
		}
	}
	if artifacts == 0 {
		t.Errorf("the long command output was not spilled to an artifact: %v", keys(persisted))
	}
	if !bytes.Contains(persisted[requests], []byte("Always run the tests with -count=1.")) {
		t.Errorf("the project's AGENTS.md did not reach the model")
	}
	if !bytes.Contains(persisted[requests], []byte("- Prefer small commits.")) {
		t.Errorf("the instructions of .bridle/settings.json did not reach the model")
	}
	if len(persisted[requests]) == 0 || !bytes.Contains(persisted[requests], []byte("REDACTED")) {
		t.Errorf("the provider requests hold no redaction marker: %.500s", persisted[requests])
	}

	// Tool calls reach the editor with their ACP kind, locations and, for
	// the edit, a diff content block.
	calls := map[string]map[string]any{}
	for _, u := range a.Updates(sid) {
		if u.Kind != "tool_call" && u.Kind != "tool_call_update" {
			continue
		}
		id, _ := u.Fields["toolCallId"].(string)
		if calls[id] == nil {
			calls[id] = map[string]any{}
		}
		for k, v := range u.Fields {
			calls[id][k] = v
		}
	}
	kinds := map[string]int{}
	var edit map[string]any
	for _, c := range calls {
		k, _ := c["kind"].(string)
		kinds[k]++
		if k == "edit" {
			edit = c
		}
	}
	if kinds["read"] < 2 || kinds["search"] != 1 || kinds["execute"] < 2 || kinds["edit"] != 1 || kinds["think"] != 1 {
		t.Errorf("tool kinds = %v", kinds)
	}
	if edit == nil {
		t.Fatal("no edit tool call")
	}
	raw, _ := json.Marshal(edit)
	for _, want := range []string{`"type":"diff"`, `"path":"` + filepath.Join(ws, "config.yaml"), `"oldText":"token: [REDACTED`, `name: prod`, `"status":"completed"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("edit tool call lacks %s: %s", want, raw)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "config.yaml")); string(b) != "token: "+fileToken+"\nname: prod\n" {
		t.Errorf("config.yaml = %q", b)
	}

	log := acptest.Log(t, a.DB, sid)
	var all []string
	for _, e := range log {
		p, _ := json.Marshal(e["payload"])
		all = append(all, fmt.Sprint(e["kind"], " ", string(p)))
	}
	text := strings.Join(all, "\n")
	for _, want := range []string{
		`"name":"edit_file"`, `"before_hash":"sha256:`, `"after_hash":"sha256:`, // hashes for crash-resume
		`read_file: the arguments do not match its schema`, // bad input is a result
		`decision_recorded {"source":"model","text":"keep the token in config.yaml"`,
		`not available in read-only mode`,
		`read_artifact a`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("log lacks %s:\n%s", want, text)
		}
	}
	a.AssertValid(t)
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
