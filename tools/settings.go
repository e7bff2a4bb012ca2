package tools

import (
	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/sandbox/box"
)

// NewTools returns every built-in tool configured by s; run_command runs
// in b.
func NewTools(s config.Sandbox, b *box.Box) []Tool {
	return []Tool{
		ReadFile{MaxLines: s.Caps.ReadFileLines},
		ListDir{MaxEntries: s.Caps.ListEntries},
		Glob{MaxResults: s.Caps.GlobResults},
		Grep{MaxMatches: s.Caps.GrepMatches},
		ReadArtifact{},
		EditFile{},
		WriteFile{},
		&RunCommand{Box: b, Settings: s.Command, Caps: Caps{
			HeadLines: orDefault(s.Caps.CommandHeadLines, 100), HeadBytes: 8 << 10,
			TailLines: orDefault(s.Caps.CommandTailLines, 200), TailBytes: 16 << 10,
		}},
		NewWebFetch(s.Command.AllowHosts),
		CommandOutput{},
		CommandInput{},
		CommandStop{},
		Remember{},
		Plan{},
	}
}

// DefaultTools returns every built-in tool with the default settings.
func DefaultTools() []Tool { return NewTools(config.Sandbox{}, box.New(box.Options{})) }
