package config

import (
	"strings"
	"testing"
)

func TestParseSandbox(t *testing.T) {
	s, err := ParseSandbox([]byte(`{"command": {"timeout_seconds": 30, "allow_hosts": ["proxy.golang.org"]}, "caps": {"grep_matches": 50}}`))
	if err != nil || s.Command.Timeout().Seconds() != 30 || s.Caps.GrepMatches != 50 || s.Command.AllowHosts[0] != "proxy.golang.org" {
		t.Fatalf("%+v %v", s, err)
	}
	if _, err := ParseSandbox([]byte(`{"command": {"timeout": 30}}`)); err == nil || !strings.Contains(err.Error(), `unknown key "timeout" in command`) {
		t.Fatalf("misspelt key: %v", err)
	}
	if s, err := ParseSandbox(nil); err != nil || s.Command.Timeout().Seconds() != 120 || s.Command.Memory() != 4<<30 {
		t.Fatalf("defaults: %+v %v", s, err)
	}
	if _, err := ParseSandbox([]byte(`{"command": {"checkpoint": "overlay"}}`)); err == nil || !strings.Contains(err.Error(), `command.checkpoint is "overlay"; it is "watch" (the default) or "scan"`) {
		t.Fatalf("unknown checkpoint: %v", err)
	}
}
