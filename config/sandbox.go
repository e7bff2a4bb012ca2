package config

import (
	"cmp"
	"fmt"
	"time"

	"github.com/bridle-dev/bridle/internal/strictjson"
)

// Sandbox is the "sandbox" object of the user's settings file: the box's
// and the tools' knobs (a project's file may not set it). Zero values
// mean the defaults.
type Sandbox struct {
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

// Timeout is a command's default time limit.
func (c CommandSettings) Timeout() time.Duration {
	return time.Duration(cmp.Or(c.TimeoutSeconds, 120)) * time.Second
}

// MaxTimeout bounds the time limit a call may ask for.
func (c CommandSettings) MaxTimeout() time.Duration {
	return max(time.Duration(cmp.Or(c.MaxTimeoutSeconds, 600))*time.Second, c.Timeout())
}

// Memory caps each process's address space in bytes (0: no cap).
func (c CommandSettings) Memory() int64 {
	if c.MemoryMB < 0 {
		return 0
	}
	return int64(cmp.Or(c.MemoryMB, 4096)) << 20
}

// ParseSandbox reads the "sandbox" object of a settings file; empty
// means the defaults. Unknown keys are errors, so that a misspelt limit is
// not silently ignored, and keys are spelt exactly: "Command" or
// "ALLOW_HOSTS" are unknown keys, not the settings they resemble.
func ParseSandbox(raw []byte) (Sandbox, error) {
	var s Sandbox
	if len(raw) == 0 {
		return s, nil
	}
	if err := strictjson.Unmarshal(raw, &s); err != nil {
		return Sandbox{}, fmt.Errorf("the \"sandbox\" settings are not valid: %w (see docs/sandbox.md)", err)
	}
	if s.Command.MaxTimeoutSeconds < 0 || s.Command.TimeoutSeconds < 0 || s.Command.Processes < 0 || s.Command.TmpMB < 0 || s.Command.ShmMB < 0 {
		return Sandbox{}, fmt.Errorf("the \"sandbox\" settings are not valid: timeouts, processes and sizes must not be negative")
	}
	switch s.Command.Checkpoint {
	case "", "watch", "scan":
	default:
		return Sandbox{}, fmt.Errorf("the \"sandbox\" settings are not valid: command.checkpoint is %q; it is \"watch\" (the default) or \"scan\"", s.Command.Checkpoint)
	}
	return s, nil
}
