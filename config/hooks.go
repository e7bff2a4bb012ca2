package config

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/bridle-dev/bridle/internal/strictjson"
)

// The points of the loop a hook can run at, named as Claude Code names
// them (Gemini CLI's BeforeTool, AfterTool, BeforeAgent, AfterAgent and
// SessionStart are the same points).
const (
	HookSessionStart     = "SessionStart"
	HookUserPromptSubmit = "UserPromptSubmit"
	HookPreToolUse       = "PreToolUse"
	HookPostToolUse      = "PostToolUse"
	HookStop             = "Stop"
)

// HookEvents lists the points, in the order a turn meets them.
var HookEvents = []string{HookSessionStart, HookUserPromptSubmit, HookPreToolUse, HookPostToolUse, HookStop}

// Hook is one command the settings run at a point of the loop.
type Hook struct {
	// Event is one of HookEvents.
	Event string `json:"-"`
	// Matcher, for the tool events, is a regular expression the whole
	// tool name must match ("edit_file|write_file"); "" or "*": every tool.
	Matcher string `json:"matcher,omitempty"`
	// Command is run with /bin/sh -c in the box, in the session's
	// directory, with the event as JSON on its standard input.
	Command string `json:"command"`
	// TimeoutSeconds bounds it (default 60, at most 600).
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`

	// Whose is "user" or "project"; File the settings file it came from.
	Whose string `json:"-"`
	File  string `json:"-"`

	match *regexp.Regexp
}

// maxHooksPerFile bounds the hooks one settings file may declare.
const maxHooksPerFile = 64

// Timeout is the hook's time limit.
func (h Hook) Timeout() time.Duration {
	if h.TimeoutSeconds <= 0 {
		return 60 * time.Second
	}
	return time.Duration(h.TimeoutSeconds) * time.Second
}

// Matches reports whether the hook runs for a call of tool (tool events)
// or at all (the others, whose tool is "").
func (h Hook) Matches(tool string) bool {
	if h.match == nil || tool == "" {
		return true
	}
	return h.match.MatchString(tool)
}

// parseHooks reads a file's "hooks" section: an object of event names,
// each a list of hooks. Unknown events and keys are errors naming them.
func parseHooks(raw json.RawMessage, path, whose string) ([]Hook, error) {
	var byEvent map[string][]Hook
	if err := strictjson.Unmarshal(raw, &byEvent); err != nil {
		return nil, fmt.Errorf("\"hooks\": %w", err)
	}
	var out []Hook
	for _, ev := range HookEvents {
		for i, h := range byEvent[ev] {
			where := fmt.Sprintf("\"hooks\".%s[%d]", ev, i)
			if strings.TrimSpace(h.Command) == "" {
				return nil, fmt.Errorf("%s has no \"command\"", where)
			}
			if h.TimeoutSeconds < 0 || h.TimeoutSeconds > 600 {
				return nil, fmt.Errorf("%s: \"timeout_seconds\" %d is not between 1 and 600", where, h.TimeoutSeconds)
			}
			if h.Matcher != "" && h.Matcher != "*" {
				if ev != HookPreToolUse && ev != HookPostToolUse {
					return nil, fmt.Errorf("%s: \"matcher\" applies to PreToolUse and PostToolUse only", where)
				}
				re, err := regexp.Compile("^(?:" + h.Matcher + ")$")
				if err != nil {
					return nil, fmt.Errorf("%s: \"matcher\" %q is not a regular expression: %v", where, h.Matcher, err)
				}
				h.match = re
			}
			h.Event, h.Whose, h.File = ev, whose, path
			out = append(out, h)
		}
	}
	for ev := range byEvent {
		if !slices.Contains(HookEvents, ev) {
			return nil, fmt.Errorf("\"hooks\": unknown event %q: use %s", ev, strings.Join(HookEvents, ", "))
		}
	}
	if len(out) > maxHooksPerFile {
		return nil, fmt.Errorf("\"hooks\" declares %d hooks: at most %d", len(out), maxHooksPerFile)
	}
	return out, nil
}
