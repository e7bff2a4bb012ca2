// Package permission is the approval policy, as pure functions: a mode and
// a tool's effect say whether a call is offered at all and whether it may
// run at once; the user's standing answers (allow_always, reject_always,
// each with the pattern it covers) settle the calls the mode would ask
// about. No I/O: the session reads the answers from its log and records
// new ones; the sandbox filters its catalogue by Offered.
package permission

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// Mode names a tool registry and its approval policy.
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

// Effect is what a tool can do to the machine. Modes decide approvals by
// effect, so a new tool only has to say which it has.
type Effect int

const (
	// EffectNone changes nothing outside the session (remember, think).
	EffectNone Effect = iota
	// EffectRead reads the workspace.
	EffectRead
	// EffectEdit writes files in the workspace.
	EffectEdit
	// EffectExecute runs a process.
	EffectExecute
)

// Decision is what the policy says about a call.
type Decision int

const (
	// Allow: the call runs without a question.
	Allow Decision = iota
	// Ask: the user is asked, with Options.
	Ask
	// Deny: the call does not run; the user said so for the session, or
	// the mode does not offer the tool at all.
	Deny
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

// Permission option ids, as ACP names their kinds.
const (
	AllowOnce    = "allow_once"
	AllowAlways  = "allow_always"
	RejectOnce   = "reject_once"
	RejectAlways = "reject_always"
)

// Options are the option ids of a question, in the order they are offered.
func Options() []string { return []string{AllowOnce, AllowAlways, RejectOnce, RejectAlways} }

// Granted reports whether an answer lets the call run.
func Granted(option string) bool { return option == AllowOnce || option == AllowAlways }

// Always reports whether an answer stands for the rest of the session.
func Always(option string) bool { return option == AllowAlways || option == RejectAlways }

// Offered reports whether mode offers tools of effect at all: read-only
// offers only tools that read; the other modes offer every tool and
// differ in what needs approval.
func Offered(mode Mode, effect Effect) bool {
	return mode != ModeReadOnly || effect <= EffectRead
}

// ForMode is the mode's own answer for a call of effect, before any
// standing answer: Deny when the mode does not offer it, Allow when it
// may run at once, Ask otherwise.
func ForMode(mode Mode, effect Effect) Decision {
	if !Offered(mode, effect) {
		return Deny
	}
	switch effect {
	case EffectNone, EffectRead:
		return Allow
	case EffectEdit:
		if mode == ModeAutoEdit || mode == ModeFullAuto {
			return Allow
		}
	case EffectExecute:
		if mode == ModeFullAuto {
			return Allow
		}
	}
	return Ask
}

// Answer is one session-scoped answer the user gave, as the log keeps it.
type Answer struct {
	Tool string
	// Option is AllowAlways or RejectAlways.
	Option string
	// Pattern is the scope's pattern the answer was given for.
	Pattern string
}

// Verdict is the policy's decision about one call.
type Verdict struct {
	Decision Decision
	// Standing is the standing answer that decided (AllowAlways or
	// RejectAlways), or "" when the mode decided or the user is asked.
	Standing string
}

// Decide combines the mode with the standing answers: what the mode
// allows or refuses it decides alone; what it would ask about, the latest
// standing answer for the tool that covers the call settles, and without
// one the user is asked.
func Decide(mode Mode, effect Effect, answers []Answer, tool string, call Scope) Verdict {
	return Settle(ForMode(mode, effect), answers, tool, call)
}

// Settle is Decide from a decision already made for the call (the mode's,
// or Ask for a call the mode allows but whose host the settings do not):
// an Ask is settled by the latest standing answer that covers the call.
func Settle(d Decision, answers []Answer, tool string, call Scope) Verdict {
	if d != Ask {
		return Verdict{Decision: d}
	}
	switch s := Standing(answers, tool, call); s {
	case AllowAlways:
		return Verdict{Decision: Allow, Standing: s}
	case RejectAlways:
		return Verdict{Decision: Deny, Standing: s}
	}
	return Verdict{Decision: Ask}
}

// Standing returns the latest answer for tool whose pattern covers call:
// AllowAlways, RejectAlways or "". Answers are in the order given; a
// later answer overrides an earlier one.
func Standing(answers []Answer, tool string, call Scope) string {
	ans := ""
	for _, a := range answers {
		if a.Tool == tool && (a.Option == AllowAlways || a.Option == RejectAlways) && call.Matches(a.Pattern) {
			ans = a.Option
		}
	}
	return ans
}

// Scope is what a session-wide answer about one call covers.
type Scope struct {
	// Pattern matches the call's target: a slash-separated glob over
	// workspace-relative paths ("src/app/**"), the exact command line, or
	// "*" for every call of the tool.
	Pattern string
	// Label says it to the user, inside an option's name.
	Label string
	// Paths are the call's targets, workspace-relative and slash-separated
	// (absolute when outside the workspace); Command its command line.
	Paths   []string
	Command string
	// Host is the host and port a network call reaches; an answer about
	// it covers that host and port only.
	Host string
	// Target is the one thing a call acts on when it is neither paths nor
	// a command line (a background command's input, "input:bg1"): an
	// answer covers that target only.
	Target string
}

// HostScope is the scope of a call that reaches hostport: a
// session-wide answer covers every call to it.
func HostScope(hostport string) Scope {
	return Scope{Pattern: "host:" + hostport, Label: "the host " + hostport, Host: hostport}
}

// InputScope is the scope of a write to the input of the background
// command id (command is its command line, for the label): a
// session-wide answer covers what is written to that command, not to the
// session's others.
func InputScope(id, command string) Scope {
	label := id
	if command != "" {
		if r := []rune(command); len(r) > 60 {
			command = string(r[:60]) + "…"
		}
		label = fmt.Sprintf("%s (`%s`)", id, command)
	}
	return Scope{Pattern: "input:" + id, Label: label, Target: "input:" + id}
}

// ScopeOf derives the scope a session-wide answer would have for a call:
// its exact command line when it runs one; else the closest directory
// holding every path it touches (paths are absolute or relative to root);
// else every call of the tool.
func ScopeOf(root, command string, paths []string) Scope {
	if command != "" {
		return Scope{Pattern: command, Label: fmt.Sprintf("the command `%s`", command), Command: command}
	}
	var rels []string
	for _, p := range paths {
		rels = append(rels, Rel(root, p))
	}
	if len(rels) == 0 {
		return Scope{Pattern: "*", Label: "every call"}
	}
	dir := path.Dir(rels[0])
	for _, r := range rels[1:] {
		for !within(r, dir) {
			dir = path.Dir(dir)
		}
	}
	pattern, label := dir+"/**", "files under "+dir+"/"
	if dir == "." {
		pattern, label = "**", "any file in the workspace"
	}
	return Scope{Pattern: pattern, Label: label, Paths: rels}
}

// Rel makes p workspace-relative and slash-separated when it is inside
// root; others stay absolute.
func Rel(root, p string) string {
	if !filepath.IsAbs(p) {
		return filepath.ToSlash(filepath.Clean(p))
	}
	if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return filepath.ToSlash(p)
}

func within(p, dir string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}

// Matches reports whether a recorded pattern covers the call: "*" every
// call; a command call only its exact command line; a call on paths when
// every path matches.
func (call Scope) Matches(pattern string) bool {
	switch {
	case pattern == "*":
		return true
	case call.Host != "":
		return pattern == "host:"+call.Host
	case call.Target != "":
		return pattern == call.Target
	case call.Command != "":
		return pattern == call.Command
	case len(call.Paths) == 0:
		return false
	}
	for _, p := range call.Paths {
		if !globMatch(pattern, p) {
			return false
		}
	}
	return true
}

// slashAbs reports whether the slash path p (Rel's) is absolute on Unix
// or Windows: "/x", "//server/share", "C:/x", or drive-relative "C:x".
// Rel leaves paths outside the workspace absolute, and "**" (any file in
// the workspace) must cover none of them, whatever the system.
func slashAbs(p string) bool {
	return strings.HasPrefix(p, "/") || len(p) >= 2 && p[1] == ':' && ('a' <= p[0]|0x20 && p[0]|0x20 <= 'z')
}

// globMatch matches slash paths against a pattern whose only wildcard is
// a trailing "/**" (or "**" alone): the patterns ScopeOf writes.
func globMatch(pattern, p string) bool {
	if pattern == "**" {
		return !slashAbs(p)
	}
	if dir, ok := strings.CutSuffix(pattern, "/**"); ok {
		return within(p, dir)
	}
	return pattern == p
}
