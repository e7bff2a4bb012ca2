package sandbox

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/bridle-dev/bridle/internal/strictjson"
	"github.com/bridle-dev/bridle/sandbox/box"
)

// Settings are the box's knobs; internal/app fills them from the "sandbox" object
// of settings.json. Zero values mean the defaults.
type Settings struct {
	Command CommandSettings `json:"command"`
	Caps    ToolCaps        `json:"caps"`
}

// CommandSettings govern run_command.
type CommandSettings struct {
	// TimeoutSeconds is a command's default time limit (120).
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
	// MaxTimeoutSeconds bounds what a call may ask for (600).
	MaxTimeoutSeconds int `json:"max_timeout_seconds,omitempty"`
	// MemoryMB caps each process's address space (4096; -1: no cap, for
	// tools like the race detector that reserve huge address ranges).
	MemoryMB int `json:"memory_mb,omitempty"`
	// Processes caps the processes and threads of one command (1024).
	Processes int `json:"processes,omitempty"`
	// AllowHosts may be reached through the box's proxy; empty: no
	// network. "example.com", "*.example.com", "host:8080".
	AllowHosts []string `json:"allow_hosts,omitempty"`
	// EnvAllow adds environment variable names (or NAME_* prefixes)
	// passed to commands besides the built-in list. Names that look
	// secret are never passed.
	EnvAllow []string `json:"env_allow,omitempty"`
	// AllowUnixSockets lets commands create Unix sockets.
	AllowUnixSockets bool `json:"allow_unix_sockets,omitempty"`
	// AllowUserNamespaces lets commands create user namespaces (rootless
	// containers, some sandboxed test runners). Off, unshare and clone
	// with CLONE_NEWUSER fail with EPERM.
	AllowUserNamespaces bool `json:"allow_user_namespaces,omitempty"`
	// HiddenPaths are more files or directories commands and the file
	// tools may not see, besides bridle's own and the credential stores
	// ("~/.secrets"; absolute or under "~/").
	HiddenPaths []string `json:"hidden_paths,omitempty"`
	// VisiblePaths take credential stores off the hidden list
	// ("~/.kube" for a command that needs a cluster).
	VisiblePaths []string `json:"visible_paths,omitempty"`
	// TmpMB and ShmMB size the private $TMPDIR and /dev/shm of a command
	// (512 MiB each).
	TmpMB int `json:"tmp_mb,omitempty"`
	ShmMB int `json:"shm_mb,omitempty"`
	// Checkpoint says how a rewind learns what commands change: "watch"
	// (the default) has the box say which files a command is about to
	// change, falling back to "scan" where the box cannot; "scan" scans
	// the workspace before and after each command.
	Checkpoint string `json:"checkpoint,omitempty"`
}

// ToolCaps bound what each tool returns at once.
type ToolCaps struct {
	ReadFileLines int `json:"read_file_lines,omitempty"` // 2000
	ListEntries   int `json:"list_entries,omitempty"`    // 500
	GlobResults   int `json:"glob_results,omitempty"`    // 500
	GrepMatches   int `json:"grep_matches,omitempty"`    // 200
	// CommandHeadLines/TailLines: what run_command shows of a long output
	// (100 and 200 lines, at most 8 and 16 KiB).
	CommandHeadLines int `json:"command_head_lines,omitempty"`
	CommandTailLines int `json:"command_tail_lines,omitempty"`
}

func (c CommandSettings) timeout() time.Duration {
	return time.Duration(orDefault(c.TimeoutSeconds, 120)) * time.Second
}

func (c CommandSettings) maxTimeout() time.Duration {
	return max(time.Duration(orDefault(c.MaxTimeoutSeconds, 600))*time.Second, c.timeout())
}

func (c CommandSettings) memory() int64 {
	if c.MemoryMB < 0 {
		return 0
	}
	return int64(orDefault(c.MemoryMB, 4096)) << 20
}

// NewTools returns every built-in tool configured by s; run_command runs
// in b.
func NewTools(s Settings, b *box.Box) []Tool {
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
		Remember{},
		Plan{},
	}
}

// DefaultTools returns every built-in tool with the default settings.
func DefaultTools() []Tool { return NewTools(Settings{}, box.New(box.Options{})) }

// MaybeRunHelper runs the box's helper when this process is one, and
// exits; otherwise it returns at once. main must call it first thing.
func MaybeRunHelper() { box.MaybeRunHelper() }

// Probe runs the box's doctor report in the background, so that
// initialize can name the missing layers without waiting on a cold start
// more than it must.
type Probe struct {
	done chan struct{}
	rep  box.Report
}

// StartProbe starts probing b.
func StartProbe(b *box.Box) *Probe {
	p := &Probe{done: make(chan struct{})}
	go func() {
		p.rep = b.Report()
		close(p.done)
	}()
	return p
}

// Report waits for the probe and returns its report.
func (p *Probe) Report() box.Report {
	<-p.done
	return p.rep
}

// MarshalJSON renders the report for initialize's _meta: the layers, the
// missing ones with what bridle does without them, and whether commands
// are kept in at all.
func (p *Probe) MarshalJSON() ([]byte, error) {
	r := p.Report()
	missing := r.MissingLayers()
	if missing == nil {
		missing = []string{}
	}
	return json.Marshal(struct {
		Layers  []box.Layer `json:"layers"`
		Missing []string    `json:"missing"`
		// Unconfined says why commands are not kept in, when they are not
		// (full-auto then asks once per session).
		Unconfined string `json:"unconfined,omitempty"`
	}{r.Layers, missing, r.Unconfined()})
}

// ParseSettings reads the "sandbox" object of a settings file; empty
// means the defaults. Unknown keys are errors, so that a misspelt limit is
// not silently ignored, and keys are spelt exactly: "Command" or
// "ALLOW_HOSTS" are unknown keys, not the settings they resemble.
func ParseSettings(raw []byte) (Settings, error) {
	var s Settings
	if len(raw) == 0 {
		return s, nil
	}
	if err := strictjson.Unmarshal(raw, &s); err != nil {
		return Settings{}, fmt.Errorf("the \"sandbox\" settings are not valid: %w (see docs/sandbox.md)", err)
	}
	if s.Command.MaxTimeoutSeconds < 0 || s.Command.TimeoutSeconds < 0 || s.Command.Processes < 0 || s.Command.TmpMB < 0 || s.Command.ShmMB < 0 {
		return Settings{}, fmt.Errorf("the \"sandbox\" settings are not valid: timeouts, processes and sizes must not be negative")
	}
	switch s.Command.Checkpoint {
	case "", "watch", "scan":
	default:
		return Settings{}, fmt.Errorf("the \"sandbox\" settings are not valid: command.checkpoint is %q; it is \"watch\" (the default) or \"scan\"", s.Command.Checkpoint)
	}
	return s, nil
}
