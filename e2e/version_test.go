package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
)

// TestTheBinarySaysItsVersion: --version and initialize's agentInfo and
// _meta.bridle.build name the release in VERSION, so an editor (and a
// user filing a bug) can tell which binary runs.
func TestTheBinarySaysItsVersion(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSpace(string(raw))
	out, err := exec.Command(acptest.Binary(t), "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("bridle --version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "bridle "+want+" ") {
		t.Errorf("bridle --version = %q, want it to start with %q", out, "bridle "+want)
	}

	a := acptest.Start(t, acptest.Options{})
	var init struct {
		AgentInfo struct {
			Version string `json:"version"`
		} `json:"agentInfo"`
		AgentCapabilities struct {
			Meta struct {
				Bridle struct {
					Build map[string]string `json:"build"`
				} `json:"bridle"`
			} `json:"_meta"`
		} `json:"agentCapabilities"`
	}
	if err := json.Unmarshal(a.Initialize(), &init); err != nil {
		t.Fatal(err)
	}
	if init.AgentInfo.Version != want {
		t.Errorf("agentInfo.version = %q, want %q", init.AgentInfo.Version, want)
	}
	b := init.AgentCapabilities.Meta.Bridle.Build
	if b["version"] != want || b["commit"] == "" || b["date"] == "" || !strings.HasPrefix(b["go"], "go") || b["platform"] == "" {
		t.Errorf("_meta.bridle.build = %v, want the version %s, a commit, a date, the Go version and the platform", b, want)
	}
}
