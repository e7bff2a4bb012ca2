package sandbox

import "fmt"

// Mode names a tool registry. A tool absent from a mode's registry is
// absent from the catalogue the model sees.
type Mode string

const (
	ModeReadOnly Mode = "read-only"
	ModeAsk      Mode = "ask"
	ModeAutoEdit Mode = "auto-edit"
	ModeFullAuto Mode = "full-auto"
)

// DefaultMode is the mode of a new session.
const DefaultMode = ModeAsk

// ModeInfo describes a mode for the editor.
type ModeInfo struct {
	ID          Mode
	Name        string
	Description string
}

// Modes lists the modes in the order an editor should offer them.
func Modes() []ModeInfo {
	return []ModeInfo{
		{ModeReadOnly, "Read only", "Reads and searches; never edits or runs anything."},
		{ModeAsk, "Ask", "Edits and commands need your approval."},
		{ModeAutoEdit, "Auto edit", "Edits in the workspace are allowed; commands need approval."},
		{ModeFullAuto, "Full auto", "Everything is allowed inside the box."},
	}
}

// ParseMode checks that s names a mode.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes() {
		if string(m.ID) == s {
			return m.ID, nil
		}
	}
	return "", fmt.Errorf("unknown mode %q: use one of read-only, ask, auto-edit, full-auto", s)
}

// Decision is what a mode says about a call.
type Decision int

const (
	Allow Decision = iota
	Ask
)

// Registry is the set of tools one mode offers.
type Registry struct {
	mode  Mode
	tools []Tool
}

// NewRegistry returns the registry of mode over the given tools: the tools
// whose effect the mode permits at all.
func NewRegistry(mode Mode, tools []Tool) *Registry {
	r := &Registry{mode: mode}
	for _, t := range tools {
		if mode == ModeReadOnly && t.Effect() > EffectRead {
			continue
		}
		r.tools = append(r.tools, t)
	}
	return r
}

// Mode returns the registry's mode.
func (r *Registry) Mode() Mode { return r.mode }

// Tools returns the tools in catalogue order.
func (r *Registry) Tools() []Tool { return r.tools }

// Get returns the named tool, or false if the mode does not offer it.
func (r *Registry) Get(name string) (Tool, bool) {
	for _, t := range r.tools {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
}

// Decide says whether a call to t may run at once or needs approval.
func (r *Registry) Decide(t Tool) Decision {
	switch t.Effect() {
	case EffectNone, EffectRead:
		return Allow
	case EffectEdit:
		if r.mode == ModeAutoEdit || r.mode == ModeFullAuto {
			return Allow
		}
	case EffectExecute:
		if r.mode == ModeFullAuto {
			return Allow
		}
	}
	return Ask
}

// DefaultTools returns every built-in tool.
func DefaultTools() []Tool {
	return []Tool{ReadFile{}}
}
