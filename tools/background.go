package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/bridle-dev/bridle/sandbox/box"
)

// A command run_command starts in the background (a dev server, a
// watcher, a long test run) runs in the same box as any command, with
// the same limits but no timeout, until it ends, command_stop stops it,
// or its session ends (close, delete, cancel, bridle's exit). Its output
// goes to a bounded ring, redacted as it is written, that command_output
// reads; command_input writes to its standard input.
const (
	// MaxBackground bounds the commands a session runs in the background
	// at once.
	MaxBackground = 4
	// backgroundRing is how much of a command's latest output is kept.
	backgroundRing = 256 << 10
	// backgroundRead bounds what one command_output returns.
	backgroundRead = 16 << 10
	// backgroundInput bounds what one command_input writes.
	backgroundInput = 64 << 10
	// maxOutputWait bounds command_output's wait for new output.
	maxOutputWait = 60 * time.Second
	// stopWait bounds how long a stop waits for the box to be gone.
	stopWait = 10 * time.Second
)

// Background is a session's commands running in the background. The
// session makes one and gives it to every call's Env; its hooks record
// what a command changes and how it ended.
type Background struct {
	// Max bounds the commands running at once; 0: MaxBackground.
	Max int
	// Begin, when set, is asked before a command starts for what the
	// box tells of the files it changes (nil: nothing); the session
	// records them when the command ends (Ended).
	Begin func(key string) box.Writes
	// Live, when set, is shown the end of a command's output as it comes,
	// on the card of the call that started it (key).
	Live func(key, tail string)
	// Started, when set, is told the pid of the first process of a
	// command's box (box.Spec.Started), for a record a later bridle can
	// kill it by should this one die.
	Started func(key string, pid int)
	// Ended, when set, is told once of each command's end, after every
	// process of its box is gone.
	Ended func(BackgroundEnd)
	// Refuse, when set, says why no command may start now ("": one may):
	// the session is read-only. It is asked with the commands' list
	// locked, so a StopAll that follows the change it reads stops a
	// command that started before it, and none starts after.
	Refuse func() string

	mu     sync.Mutex
	first  int // the number of the session's first command here
	cmds   []*bgCommand
	closed string // why no command starts any more ("": they may)
}

// BackgroundEnd is how a background command ended.
type BackgroundEnd struct {
	ID, Key, Command string
	// Status is completed (exit status 0), failed, or stopped (by
	// command_stop or the session's end).
	Status string
	// Summary is the box's line about how it ended, and why it stopped.
	Summary string
	// Tail is the end of its output, redacted.
	Tail string
	// Unwatched says why Begin's Writes were not told what it changed.
	Unwatched string
}

type bgCommand struct {
	id, key, command string
	stdin            *os.File
	cancel           context.CancelFunc
	done             chan struct{}
	end              BackgroundEnd // set before done is closed
	// recorded is closed once Ended was told: a stop waits for it.
	recorded chan struct{}

	mu        sync.Mutex
	out       *outputRing   // the latest output, backgroundRing of it: redacted as it is read
	lastWrite time.Time     // when it last wrote
	changed   chan struct{} // closed by a write when waiting is set
	waiting   bool          // a read waits on changed
	stopping  string        // why it is being stopped ("": it is not)

	// reading serializes reads (Output), and guards what they keep:
	// read, shown, tried.
	reading sync.Mutex
	// read is the offset command_output has returned up to: a line's
	// start, but for a line longer than lineReach.
	read int64
	// shown is what a read showed, redacted, of the line that starts at
	// read and has not ended (releaseLine); tried is the offset up to
	// which that line was looked at for more to show.
	shown string
	tried int64
	// afterWait, when set, is called by a read after its wait, before it
	// takes the output: a test writes there.
	afterWait func()
	// loop is its box's loopback once it runs (box.Spec.Serves): the
	// session's later commands reach what it listens on.
	loop *box.Loopback
}

// Write implements io.Writer for the command's redacted output.
func (c *bgCommand) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out.Write(p)
	if len(p) > 0 {
		c.lastWrite = time.Now()
		if c.waiting {
			// Remade only when a read waits: a write no one waits for
			// costs no allocation.
			close(c.changed)
			c.changed = make(chan struct{})
			c.waiting = false
		}
	}
	return len(p), nil
}

func (c *bgCommand) running() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// BackgroundStart is what starting a command needs besides its box.Spec:
// the box, the call's Env (its key names the command's card, its
// redactor redacts the output) and what to release when it has ended
// (the command's announcement, fslock).
type BackgroundStart struct {
	Box     *box.Box
	Spec    box.Spec
	Command string
	Release func()
}

// Start starts a command in the background and returns its id (bg1,
// bg2, … in the order of the session's starts). The command runs until
// it ends or is stopped, whatever ctx, the call's, does.
func (b *Background) Start(env *Env, st BackgroundStart) (string, error) {
	b.mu.Lock()
	if b.closed != "" {
		b.mu.Unlock()
		return "", errors.New(b.closed)
	}
	if b.Refuse != nil {
		if why := b.Refuse(); why != "" {
			b.mu.Unlock()
			return "", errors.New(why)
		}
	}
	var running []string
	for _, c := range b.cmds {
		if c.running() {
			running = append(running, c.id)
		}
	}
	if max := orDefault(b.Max, MaxBackground); len(running) >= max {
		b.mu.Unlock()
		return "", fmt.Errorf("%d commands already run in the background in this session (%s), the most it may: stop one with command_stop first", len(running), strings.Join(running, ", "))
	}
	r, w, err := os.Pipe()
	if err != nil {
		b.mu.Unlock()
		return "", fmt.Errorf("stdin pipe: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &bgCommand{id: fmt.Sprintf("bg%d", max(b.first, 1)+len(b.cmds)), key: env.Key, command: st.Command,
		stdin: w, cancel: cancel, done: make(chan struct{}), recorded: make(chan struct{}), changed: make(chan struct{}),
		out: newOutputRing(backgroundRing)}
	b.cmds = append(b.cmds, c)
	b.mu.Unlock()

	var out io.Writer = c
	stopLive := func() {}
	if b.Live != nil {
		var live io.Writer
		live, stopLive = startLive(env, func(tail string) { b.Live(c.key, tail) })
		out = io.MultiWriter(c, live)
	}
	s := st.Spec
	s.StdinPipe, s.Output, s.Timeout, s.Writes = r, out, 0, nil
	if b.Begin != nil {
		s.Writes = b.Begin(c.key)
	}
	if b.Started != nil {
		s.Started = func(pid int) { b.Started(c.key, pid) }
	}
	s.Serves = func(l *box.Loopback) {
		c.mu.Lock()
		c.loop = l
		c.mu.Unlock()
	}
	go func() {
		o, err := st.Box.Run(ctx, s)
		r.Close()
		stopLive()
		if st.Release != nil {
			st.Release()
		}
		// The editor may have reloaded files the command changed.
		env.Texts.Clear()
		c.mu.Lock()
		why := c.stopping
		tail := tailOf(env.redact(c.out.text(0, c.out.total)), liveLines, liveBytes)
		c.mu.Unlock()
		end := BackgroundEnd{ID: c.id, Key: c.key, Command: c.command, Tail: tail, Unwatched: o.Unwatched}
		switch {
		case err != nil:
			end.Status, end.Summary = "failed", "[the sandbox failed: "+env.redact(err.Error())+"]"
		case why != "":
			end.Status, end.Summary = "stopped", "[stopped: "+why+"; the command and all its processes were killed]"
		default:
			end.Status, end.Summary = "completed", o.Summary(0)
			if o.ExitCode != 0 || o.Signal != "" || o.MemoryLimitHit {
				end.Status = "failed"
			}
		}
		c.end = end
		w.Close()
		close(c.done)
		if b.Ended != nil {
			b.Ended(end)
		}
		close(c.recorded)
	}()
	return c.id, nil
}

// Number sets the number the first command started here is named by
// (bg3): the session's log holds n-1 already.
func (b *Background) Number(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.first = n
}

// Command is the command line of the background command id ("" when
// there is none).
func (b *Background) Command(id string) string {
	if c, err := b.find(id); err == nil {
		return c.command
	}
	return ""
}

// find is the command id names.
func (b *Background) find(id string) (*bgCommand, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ids []string
	for _, c := range b.cmds {
		if c.id == id {
			return c, nil
		}
		ids = append(ids, c.id)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("no command was started in the background in this session (run_command with background: true starts one)")
	}
	return nil, fmt.Errorf("no background command is called %q; this session's are: %s", id, strings.Join(ids, ", "))
}

// Input writes text to the command's standard input, then closes it
// when eof is set.
func (b *Background) Input(id, text string, eof bool) error {
	c, err := b.find(id)
	if err != nil {
		return err
	}
	if !c.running() {
		return fmt.Errorf("%s has ended: %s", c.id, c.end.Summary)
	}
	if len(text) > backgroundInput {
		return fmt.Errorf("the text is %d bytes; write at most %d at a time", len(text), backgroundInput)
	}
	if text != "" {
		// A command that does not read its input must not hang the call.
		c.stdin.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c.stdin, text); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return fmt.Errorf("%s did not read its input within 5 s (its input pipe is full)", c.id)
			}
			return fmt.Errorf("%s's input is closed: %v", c.id, err)
		}
	}
	if eof {
		c.stdin.Close()
	}
	return nil
}

// Stop stops the command and everything it started, waits until they
// are gone, and returns how it ended.
func (b *Background) Stop(id, why string) (BackgroundEnd, error) {
	c, err := b.find(id)
	if err != nil {
		return BackgroundEnd{}, err
	}
	b.stop(c, why)
	select {
	case <-c.done:
		return c.end, nil
	default:
		return BackgroundEnd{}, nil // not ended within stopWait
	}
}

func (b *Background) stop(c *bgCommand, why string) {
	c.kill(why)
	select {
	case <-c.recorded:
	case <-time.After(stopWait):
	}
}

// kill has the command's box killed, for why, and returns at once: its
// end is recorded (Ended) once every process of it is gone.
func (c *bgCommand) kill(why string) {
	c.mu.Lock()
	if c.stopping == "" && c.running() {
		c.stopping = why
	}
	c.mu.Unlock()
	c.cancel()
}

// Reach is the loopbacks of the commands running in the background, for
// a command starting now (box.Spec.Reach): it reaches what they listen
// on at localhost, and no other session's commands do. Nil b: none.
func (b *Background) Reach() []*box.Loopback {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	cmds := append([]*bgCommand(nil), b.cmds...)
	b.mu.Unlock()
	var out []*box.Loopback
	for _, c := range cmds {
		c.mu.Lock()
		if c.loop != nil && c.running() {
			out = append(out, c.loop)
		}
		c.mu.Unlock()
	}
	return out
}

// Running lists the ids of the commands still running.
func (b *Background) Running() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ids []string
	for _, c := range b.cmds {
		if c.running() {
			ids = append(ids, c.id)
		}
	}
	return ids
}

// StopAll stops every running command, for why, and waits until they
// have ended and Ended was told. It returns the ids of those that were
// running, for the caller to tell the user.
func (b *Background) StopAll(why string) (stopped []string) {
	b.mu.Lock()
	cmds := append([]*bgCommand(nil), b.cmds...)
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range cmds {
		select {
		case <-c.recorded:
		default:
			// Running, or ended and not recorded yet: waited for.
			if c.running() {
				stopped = append(stopped, c.id)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				b.stop(c, why)
			}()
		}
	}
	wg.Wait()
	return stopped
}

// Cancel stops every running command, for why, and returns at once,
// without waiting for their ends: each is recorded (Ended) as it comes.
// A session/cancel stops them so: it is a notification, read where the
// connection's other messages are, which must not wait on boxes dying
// and their ends being recorded.
func (b *Background) Cancel(why string) {
	b.mu.Lock()
	cmds := append([]*bgCommand(nil), b.cmds...)
	b.mu.Unlock()
	for _, c := range cmds {
		c.kill(why)
	}
}

// Close stops every command and starts none after: the session ends.
func (b *Background) Close(why string) {
	b.mu.Lock()
	b.closed = "the session is closing: no command starts in the background"
	b.mu.Unlock()
	b.StopAll(why)
}
