package tools

import (
	"bytes"
	"context"

	"fmt"
	"time"
)

// HookRun is how one hook command ended (RunCommand.RunHook).
type HookRun struct {
	// Output is its stdout and stderr, interleaved, redacted, at most
	// maxHookOutput bytes.
	Output   string
	ExitCode int
	TimedOut bool
	// Failed says why it did not run or ended abnormally (a signal, the
	// memory cap, the box could not start): "" when it exited.
	Failed   string
	Duration time.Duration
}

// maxHookOutput bounds what a hook may answer.
const maxHookOutput = 64 << 10

// RunHook runs a hook's command in the box exactly as a run_command
// call is run: the workspace writable, bridle's files and the
// credential stores hidden, the same environment, network, memory and
// process caps; stdin is the event.
func (t *RunCommand) RunHook(ctx context.Context, env *Env, command string, stdin []byte, timeout time.Duration) HookRun {
	if t.Box == nil {
		return HookRun{Failed: "no sandbox is configured for this session"}
	}
	if err := env.Root.CheckDirs(); err != nil {
		return HookRun{Failed: err.Error()}
	}
	release, err := t.announce(ctx, env, false)
	if err != nil {
		return HookRun{Failed: err.Error()}
	}
	defer release()
	defer env.Texts.Clear()
	var out boundedBuffer
	spec := t.boxSpec(env, command, env.Root.Dir(), timeout, &out)
	spec.Env, spec.Stdin = append(spec.Env, "BRIDLE_HOOK=1"), stdin
	o, err := t.Box.Run(ctx, spec)
	r := HookRun{Output: env.redact(out.String()), ExitCode: o.ExitCode, TimedOut: o.TimedOut, Duration: o.Duration}
	switch {
	case err != nil:
		r.Failed = "the sandbox failed: " + env.redact(err.Error())
	case o.TimedOut:
		r.Failed = fmt.Sprintf("timed out after %v", timeout)
	case o.Cancelled:
		r.Failed = "cancelled"
	case o.Signal != "":
		r.Failed = "killed by " + o.Signal
	case o.MemoryLimitHit:
		r.Failed = "stopped at the memory cap"
	}
	return r
}

// boundedBuffer keeps the first maxHookOutput bytes written to it.
type boundedBuffer struct {
	bytes.Buffer
	cut bool
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := maxHookOutput - b.Len(); len(p) > room {
		b.cut = true
		b.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

func (b *boundedBuffer) String() string {
	if b.cut {
		return b.Buffer.String() + "\n[cut at 64 KiB]"
	}
	return b.Buffer.String()
}
