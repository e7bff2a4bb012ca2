package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/redact"
	"github.com/bridle-dev/bridle/sandbox/box"
)

// RunCommand runs a shell command in the workspace, inside the box.
type RunCommand struct {
	declared[*RunCommand]
	Box      *box.Box
	Settings config.CommandSettings
	Caps     Caps
	// Environ is the environment the allowlist picks from; nil: bridle's.
	Environ []string
}

func (*RunCommand) spec() *toolSpec { return &runCommandSpec }

var runCommandSpec = newSpec[runCommandInput]("run_command", KindExecute, permission.EffectExecute)

type runCommandInput struct {
	Command        string `json:"command" jsonschema:"shell command line" check:"minLength=1"`
	Workdir        string `json:"workdir,omitempty" jsonschema:"directory to run in, inside the workspace (default: the workspace)"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"time limit in seconds" check:"minimum=1"`
	Description    string `json:"description,omitempty" jsonschema:"a few words saying what the command does, shown to the user"`
	Background     bool   `json:"background,omitempty" jsonschema:"run it in the background (a server, a watcher): the call returns its id at once; read its output with command_output, write to its input with command_input, end it with command_stop"`
}

func (t *RunCommand) Description() string { return t.describe(cmdExe) }

// describe is the description where commands run through cmd.exe (Windows)
// or /bin/sh. The box's proxy and network namespace are Linux's; through
// cmd.exe a command reaches the network as the user does, and the text
// says so.
func (t *RunCommand) describe(cmdExe bool) string {
	hosts := strings.Join(t.Settings.AllowHosts, ", ")
	if cmdExe {
		hosts = ""
	}
	return runCommandSpec.doc.render(struct {
		CmdExe              bool
		ProxyHosts          string
		NoNetwork           bool
		Timeout, MaxTimeout int
		Lines               int
	}{cmdExe, hosts, !cmdExe && hosts == "", int(t.Settings.Timeout().Seconds()), int(t.Settings.MaxTimeout().Seconds()), t.Caps.HeadLines + t.Caps.TailLines})
}

func (t *RunCommand) parse(env *Env, input json.RawMessage) (runCommandInput, string, time.Duration, error) {
	in, err := parseInput[runCommandInput](env, t.Name(), runCommandSpec.schema(), input)
	if err != nil {
		return in, "", 0, err
	}
	if strings.TrimSpace(in.Command) == "" {
		return in, "", 0, fmt.Errorf("run_command: command is empty")
	}
	timeout := t.Settings.Timeout()
	if in.TimeoutSeconds > 0 && in.Background {
		return in, "", 0, fmt.Errorf("run_command: a command in the background has no timeout_seconds: it runs until it ends or command_stop stops it")
	}
	if in.TimeoutSeconds > 0 {
		timeout = time.Duration(in.TimeoutSeconds) * time.Second
		if timeout > t.Settings.MaxTimeout() {
			return in, "", 0, fmt.Errorf("run_command: timeout_seconds %d is over the limit of %d set for this session", in.TimeoutSeconds, int(t.Settings.MaxTimeout().Seconds()))
		}
	}
	dir := env.Root.Dir()
	if in.Workdir != "" {
		fi, err := env.Root.Lstat(in.Workdir)
		if err != nil {
			return in, "", 0, fmt.Errorf("run_command: workdir: %v", err)
		}
		if !fi.IsDir() {
			return in, "", 0, fmt.Errorf("run_command: workdir %s is not a directory", in.Workdir)
		}
		dir = env.Root.Abs(in.Workdir)
	}
	return in, dir, timeout, nil
}

func (t *RunCommand) Preview(_ context.Context, env *Env, input json.RawMessage) (Preview, error) {
	in, dir, _, err := t.parse(env, input)
	if err != nil {
		return Preview{}, err
	}
	title := in.Command
	if in.Description != "" {
		title = in.Description
	}
	if in.Background {
		// The question and the card say it keeps running.
		title += " (in the background)"
	}
	return Preview{Title: title, Command: in.Command, Locations: []Location{{Path: dir}}}, nil
}

func (t *RunCommand) Run(ctx context.Context, env *Env, input json.RawMessage) Result {
	in, dir, timeout, err := t.parse(env, input)
	if err != nil {
		return Errorf("%v", err)
	}
	if t.Box == nil {
		return Errorf("run_command: no sandbox is configured for this session")
	}
	// The box is given the workspace's directories by name: one renamed
	// and replaced (by a link to a directory outside) would be where the
	// command may write.
	if err := env.Root.CheckDirs(); err != nil {
		return Errorf("run_command: not run: %v", err)
	}
	if in.Background && env.Background == nil {
		return Errorf("run_command: this session cannot run commands in the background (a subagent's cannot); run it without background")
	}
	release, err := t.announce(ctx, env, in.Background)
	if err != nil {
		return Errorf("run_command: not run: %v", err)
	}
	if in.Background {
		return t.background(env, in.Command, dir, release)
	}
	defer release()
	// What bridle had from the editor's buffers may be stale once the
	// command has changed files (and the editor reloaded them).
	defer env.Texts.Clear()
	c := newCapture(env, t.Caps)
	w := redact.NewWriter(env.Redactor, c)
	var out io.Writer = w
	if env.Live != nil {
		live, stop := startLive(env, env.Live)
		defer stop()
		out = io.MultiWriter(w, live)
	}
	o, err := t.Box.Run(ctx, t.boxSpec(env, in.Command, dir, timeout, out))
	w.Close()
	res := c.Finish()
	res.Locations = []Location{{Path: dir}}
	res.Unwatched = o.Unwatched
	if err != nil {
		res.IsError = true
		res.Output += fmt.Sprintf("[the sandbox failed: %s]\n", env.redact(err.Error()))
		return res
	}
	if res.Output != "" && !strings.HasSuffix(res.Output, "\n") {
		res.Output += "\n"
	}
	res.Output += o.Summary(timeout) + "\n"
	if len(o.Missing) > 0 {
		res.Missing = o.Missing
		res.Output += "[sandbox layers missing on this machine: " + strings.Join(o.Missing, "; ") + "]\n"
	}
	res.IsError = o.ExitCode != 0 || o.TimedOut || o.Cancelled || o.Signal != "" || o.MemoryLimitHit
	if res.IsError {
		if h := mentionedHidden(res.Output, env.Root.Hidden()); len(h) > 0 {
			res.Output += "[hidden from commands, so empty here: " + strings.Join(h, ", ") +
				". bridle's own files can never be made visible; a credential store can, with sandbox.command.visible_paths in ~/.config/bridle/settings.json]\n"
		}
	}
	return res
}

// boxSpec is a command of the session's in the box, with the settings'
// limits: run_command's, a hook's, and one in the background (whose
// output, input, watch of writes, loopback and lack of a timeout
// Background.Start sets).
func (t *RunCommand) boxSpec(env *Env, command, dir string, timeout time.Duration, out io.Writer) box.Spec {
	return box.Spec{
		Command:             command,
		Dir:                 dir,
		Writable:            env.Root.Dirs(),
		Env:                 t.environment(),
		Output:              out,
		Timeout:             timeout,
		MemoryBytes:         t.Settings.Memory(),
		Processes:           orDefault(t.Settings.Processes, 1024),
		AllowHosts:          t.Settings.AllowHosts,
		AllowUnixSockets:    t.Settings.AllowUnixSockets,
		AllowUserNamespaces: t.Settings.AllowUserNamespaces,
		Hidden:              env.Root.Hidden(),
		TmpBytes:            int64(t.Settings.TmpMB) << 20,
		ShmBytes:            int64(t.Settings.ShmMB) << 20,
		Writes:              env.Writes,
		// What the session's background servers listen on, as on the
		// machine's own localhost.
		Reach: env.Background.Reach(),
	}
}

// background starts the command in the background (Background.Start):
// the call's result is its id; its card stays live until it ends.
// release ends its announcement (fslock) when it has ended.
func (t *RunCommand) background(env *Env, command, dir string, release func()) Result {
	env.Texts.Clear()
	id, err := env.Background.Start(env, BackgroundStart{Box: t.Box, Spec: t.boxSpec(env, command, dir, 0, nil), Command: command, Release: release})
	if err != nil {
		release()
		return Errorf("run_command: not started in the background: %v", err)
	}
	return Result{Output: fmt.Sprintf("[started in the background as %s: read its output with command_output {\"id\": %q}, write to its input with command_input, end it with command_stop; it is stopped when the session ends]\n", id, id),
		Locations: []Location{{Path: dir}}, Background: id}
}

// WatchesWrites says why the box cannot tell Env.Writes what a command
// changes (nil when it can).
func (t *RunCommand) WatchesWrites() error {
	switch {
	case t.Settings.Checkpoint == "scan":
		return errors.New(`sandbox.command.checkpoint is "scan"`)
	case t.Box == nil:
		return errors.New("no sandbox is configured")
	}
	return t.Box.WatchesWrites()
}

// editorWait bounds how long a command waits for the editor to answer
// questions about files of its workspace: the editor has BufferTimeout to
// answer, then is told bridle gave the question up, and must answer it.
const editorWait = 3 * BufferTimeout

// announce announces the command for its whole life (box.Run returns
// once every process of the box is gone): no question to the editor about
// a file of this workspace, from any session, is in flight while it could
// swap that file for a link (fslock). If one is, the command waits for
// the editor's answer, and its card says so. A command in the background
// is announced as such: an edit in its way does not wait for it, but is
// written on disk (writeFileText).
func (t *RunCommand) announce(ctx context.Context, env *Env, background bool) (release func(), err error) {
	wctx, cancel := context.WithTimeout(ctx, editorWait)
	defer cancel()
	announce := env.Locks.Command
	if background {
		announce = env.Locks.Background
	}
	release, err = announce(wctx, env.Root.Dirs(), func() {
		if env.Live != nil {
			env.Live("[waiting for the editor to answer a question about a file of this workspace (this or another session's): no command runs meanwhile]\n")
		}
	})
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("the editor has not answered a question about a file of this workspace (this or another session's) for %v, and no command runs until it does (a command could swap the file for a link while the editor opens it): answer or restart the editor, then retry", editorWait)
	}
	return release, err
}

// mentionedHidden lists the hidden paths a failed command's output seems
// to be about: the path itself, its last two elements (".config/gcloud")
// or a dot-named base (".ssh"), so the model and the user learn why a
// file they expected was not there.
func mentionedHidden(output string, hidden []string) []string {
	var out []string
	for _, h := range hidden {
		base := filepath.Base(h)
		tail := filepath.Join(filepath.Base(filepath.Dir(h)), base)
		if strings.Contains(output, h) || strings.Contains(output, tail) ||
			(strings.HasPrefix(base, ".") && len(base) > 3 && strings.Contains(output, base)) {
			out = append(out, h)
		}
	}
	return out
}

// envAllow are the variables a command gets from bridle's environment.
var envAllow = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "LC_*", "TZ", "SHELL",
	"GOPATH", "GOROOT", "GOMODCACHE", "GOFLAGS", "GOPROXY", "GONOSUMDB", "GOPRIVATE", "GOTOOLCHAIN",
	"CARGO_HOME", "RUSTUP_HOME", "NVM_DIR", "NODE_PATH", "PYENV_ROOT", "VIRTUAL_ENV", "CONDA_PREFIX",
	"JAVA_HOME", "GRADLE_USER_HOME", "MAVEN_HOME", "DOTNET_ROOT", "CC", "CXX", "PKG_CONFIG_PATH"}

// environment returns the command's environment (CommandEnv).
func (t *RunCommand) environment() []string {
	src := t.Environ
	if src == nil {
		src = os.Environ()
	}
	return CommandEnv(t.Settings, src)
}

// CommandEnv is what a process in the box gets of src, bridle's
// environment: the allowlisted variables (and the settings' env_allow),
// never one whose name looks secret, plus settings for a process without
// a terminal. Commands get it, and language servers.
func CommandEnv(s config.CommandSettings, src []string) []string {
	allow := append(append(append([]string(nil), envAllow...), envAllowOS...), s.EnvAllow...)
	var out []string
	for _, kv := range src {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || redact.SecretName(name) || !allowed(allow, name) {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "TERM=dumb", "NO_COLOR=1", "PAGER=cat", "GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0", "BRIDLE_SANDBOX=1")
}

func allowed(patterns []string, name string) bool {
	for _, p := range patterns {
		if envNameMatch(p, name) {
			return true
		}
	}
	return false
}
