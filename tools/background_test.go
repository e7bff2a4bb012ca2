package tools

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/redact"
)

// fakeCommand is a background command with no process: what it wrote, and
// whether it has ended.
func fakeCommand(b *Background, id string, ended bool) *bgCommand {
	c := &bgCommand{id: id, done: make(chan struct{}), recorded: make(chan struct{}), changed: make(chan struct{}), cancel: func() {},
		out: newOutputRing(backgroundRing)}
	if ended {
		c.end = BackgroundEnd{ID: id, Summary: "[exit status 0]"}
		close(c.done)
		close(c.recorded)
	}
	b.cmds = append(b.cmds, c)
	return c
}

func TestBackgroundOutput(t *testing.T) {
	r := redact.New([]string{"API_TOKEN=s3cr3t-value-123456"})
	tests := []struct {
		name   string
		writes []string // written before each read
		ended  bool
		tail   bool
		// quiet: the command wrote nothing for quietLine before each
		// read; wait: each read waits up to this long.
		quiet bool
		wait  time.Duration
		endAt int // the command ends before this read (from 1)
		// addValue is added to the redactor after the first read.
		addValue string
		want     []string // what each read holds
		absent   []string // what no read may hold
	}{
		{name: "new output only", writes: []string{"one\n", "two\n"},
			want: []string{"one\n[bg1 is running]", "two\n[bg1 is running]"}, absent: []string{"", "one"}},
		{name: "an unfinished line waits for its end while it runs", writes: []string{"par", "tial\n"},
			want: []string{"[no new output]", "partial\n"}},
		{name: "an unfinished line is given once it has ended", writes: []string{"last"}, ended: true,
			want: []string{"last\n[bg1 has ended: [exit status 0]]"}},
		{name: "a secret is redacted, whole, even written in two pieces", writes: []string{"token s3cr3t-va", "lue-123456 ok\n"},
			want: []string{"[no new output]", "token"}, absent: []string{"s3cr3t", "s3cr3t"}},
		{name: "tail gives all that is kept", writes: []string{"one\n", "two\n"}, tail: true,
			want: []string{"one\n", "one\ntwo\n"}},
		{name: "a prompt is shown once the command is quiet, and not again with its answer", writes: []string{"Password: ", "got it\n"}, quiet: true,
			want:   []string{"Password: \n[its last line is not finished: it may be waiting for input (command_input)]\n[bg1 is running]", "got it\n[bg1 is running]"},
			absent: []string{"", "Password"}},
		{name: "a prompt is shown when a read's wait runs out", writes: []string{"Continue? [y/N] "}, wait: time.Millisecond,
			want: []string{"Continue? [y/N] \n[its last line is not finished"}},
		{name: "a prompt is shown once quiet, within a read's wait", writes: []string{"Continue? [y/N] "}, wait: time.Minute,
			want: []string{"Continue? [y/N] \n[its last line is not finished"}},
		{name: "a line still being written is held", writes: []string{"Compiling pack"}, quiet: false,
			want: []string{"[no new output]"}, absent: []string{"Compiling"}},
		{name: "a secret cut by a quiet pause is held from its start, then redacted whole", writes: []string{"token s3cr3t-va", "lue-123456 ok\n"}, quiet: true,
			want: []string{"token \n", "[REDACTED:env:API_TOKEN] ok\n"}, absent: []string{"s3cr3t", "s3cr3t"}},
		{name: "a value after its name is held", writes: []string{"password = hunt", "er2-long-enough\n"}, quiet: true,
			want: []string{"password = \n"}, absent: []string{"hunt", "er2"}},
		{name: "a line shown in part grows", writes: []string{"step 1... ", "step 2... ", "done\n"}, quiet: true,
			want: []string{"step 1... \n", "step 2... \n", "done\n"}, absent: []string{"", "step 1", "step"}},
		{name: "the rest of a line shown in part once the command has ended", writes: []string{"Password: ", "x"}, quiet: true, endAt: 2,
			want: []string{"Password: \n", "x\n[bg1 has ended"}, absent: []string{"", "Password"}},
		{name: "tail shows the unfinished line too", writes: []string{"one\nPass: "}, quiet: true, tail: true,
			want: []string{"one\nPass: \n[its last line is not finished"}},
		{name: "a key block cut between two reads is redacted whole", writes: []string{"-----BEGIN RSA PRIVATE KEY-----\n", keyBody + "-----END RSA PRIVATE KEY-----\nafter\n"},
			want: []string{"[REDACTED:private-key]", "[REDACTED:private-key]\n\n\nafter\n"}, absent: []string{"", "MIIEow"}},
		{name: "a key block cut in three reads is redacted whole", writes: []string{"key:\n-----BEGIN PRIVATE KEY-----\n", keyBody, "Zm9vYmFyYmF6cXV4\n-----END PRIVATE KEY-----\nok\n"},
			want: []string{"key:\n[REDACTED:private-key]", "[REDACTED:private-key]", "[REDACTED:private-key]\n\nok\n"}, absent: []string{"", "MIIEow", "Zm9vYmFy"}},
		{name: "an unfinished line inside a key block is not shown", writes: []string{"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx1y2b3c4d5", "e6f7g8\n-----END RSA PRIVATE KEY-----\n"}, quiet: true,
			want: []string{"[REDACTED:private-key]", "[REDACTED:private-key]"}, absent: []string{"MIIEow", "e6f7g8"}},
		{name: "a line shown in part, then whole in another form, says so", writes: []string{"id: Zq9x", "LmP4vR7tK2wB done\n"}, quiet: true, addValue: "Zq9xLmP4vR7tK2wB",
			want: []string{"id: Zq9x\n", "[the line shown in part above, whole:]\nid: [REDACTED:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &Background{}
			c := fakeCommand(b, "bg1", tt.ended)
			r := r
			if tt.addValue != "" {
				r = redact.New([]string{"API_TOKEN=s3cr3t-value-123456"})
			}
			for i, w := range tt.writes {
				if i == 1 && tt.addValue != "" {
					r.AddValue(tt.addValue, "id")
				}
				c.Write([]byte(w))
				if i+1 == tt.endAt {
					c.end = BackgroundEnd{ID: "bg1", Summary: "[exit status 0]"}
					close(c.done)
				}
				if tt.quiet {
					c.mu.Lock()
					c.lastWrite = c.lastWrite.Add(-quietLine)
					c.mu.Unlock()
				}
				got, err := b.Output(context.Background(), r, "bg1", tt.tail, tt.wait)
				if err != nil {
					t.Fatal(err)
				}
				if i < len(tt.want) && !strings.Contains(got, tt.want[i]) {
					t.Errorf("read %d = %q, want it to hold %q", i+1, got, tt.want[i])
				}
				if i < len(tt.absent) && tt.absent[i] != "" && strings.Contains(got, tt.absent[i]) {
					t.Errorf("read %d = %q, holds %q", i+1, got, tt.absent[i])
				}
			}
		})
	}
}

// TestBackgroundReleaseKept: a read whose wait ended because the command
// was quiet with a line to show shows it, though the command wrote again
// before the read took its output; it does not answer "no new output" at
// once, its wait unused.
func TestBackgroundReleaseKept(t *testing.T) {
	b := &Background{}
	c := fakeCommand(b, "bg1", false)
	c.Write([]byte("Password: "))
	c.mu.Lock()
	c.lastWrite = c.lastWrite.Add(-quietLine)
	c.mu.Unlock()
	c.afterWait = func() { c.Write([]byte("x")) }
	got, err := b.Output(context.Background(), redact.New(nil), "bg1", false, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "Password: ") || strings.Contains(got, "[no new output]") {
		t.Errorf("read = %q, want the prompt", got)
	}
}

// keyBody is the body of a private key block: lines of base64.
const keyBody = "MIIEowIBAAKCAQEAx1y2b3c4d5e6f7g8h9i0jAbCdEfGhIjKlMnOpQrStUvWxYz\nQ2w3e4r5t6y7u8i9o0pAsDfGhJkLzXcVbNmQwErTyUiOpAsDfGhJkLzXcVbNm12\n"

// Output past the ring is dropped, and the next read says how much.
func TestBackgroundOutputPastTheRing(t *testing.T) {
	b := &Background{}
	c := fakeCommand(b, "bg1", false)
	line := strings.Repeat("x", 1023) + "\n"
	for range backgroundRing/len(line) + 10 {
		c.Write([]byte(line))
	}
	got, err := b.Output(context.Background(), nil, "bg1", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "[10240 bytes of output were not kept: only the last 256 KiB are]") || !strings.Contains(got, "earlier bytes of this output are not shown") {
		t.Errorf("read = %q…", got[:200])
	}
	if len(got) > backgroundRead+300 {
		t.Errorf("a read of %d bytes, over the bound", len(got))
	}
}

func TestBackgroundBoundAndNames(t *testing.T) {
	b := &Background{Max: 2}
	fakeCommand(b, "bg1", false)
	fakeCommand(b, "bg2", true)
	fakeCommand(b, "bg3", false)
	_, err := b.Start(&Env{}, BackgroundStart{})
	if err == nil || !strings.Contains(err.Error(), "2 commands already run in the background in this session (bg1, bg3)") {
		t.Errorf("a third start: %v", err)
	}
	if _, err := b.Output(context.Background(), nil, "bg9", false, 0); err == nil || !strings.Contains(err.Error(), "this session's are: bg1, bg2, bg3") {
		t.Errorf("an unknown id: %v", err)
	}
	if err := b.Input("bg2", "x", false); err == nil || !strings.Contains(err.Error(), "bg2 has ended") {
		t.Errorf("input to an ended command: %v", err)
	}
}

// TestBackgroundRefused: while Refuse says why (a read-only session),
// nothing starts, and the error says why.
func TestBackgroundRefused(t *testing.T) {
	b := &Background{Refuse: func() string { return "the session is in read-only mode" }}
	if _, err := b.Start(&Env{}, BackgroundStart{}); err == nil || err.Error() != "the session is in read-only mode" {
		t.Errorf("a start while refused: %v", err)
	}
	if len(b.Running()) != 0 {
		t.Errorf("running: %v", b.Running())
	}
}

// TestBackgroundWriteWakesOnlyAWaitingRead: a write wakes a read that
// waits for output, and one that no read waits for allocates nothing.
func TestBackgroundWriteWakesOnlyAWaitingRead(t *testing.T) {
	b := &Background{}
	c := fakeCommand(b, "bg1", false)
	line := []byte("a line\n")
	if n := testing.AllocsPerRun(100, func() { c.Write(line) }); n != 0 {
		t.Errorf("a write no read waits for: %v allocations, want 0", n)
	}
	c.reading.Lock()
	c.read = c.out.total // all read: the next read waits
	c.reading.Unlock()
	got := make(chan string, 1)
	go func() {
		out, err := b.Output(context.Background(), redact.New(nil), "bg1", false, time.Minute)
		if err != nil {
			t.Error(err)
		}
		got <- out
	}()
	for waiting := false; !waiting; runtime.Gosched() {
		c.mu.Lock()
		waiting = c.waiting
		c.mu.Unlock()
	}
	c.Write([]byte("new output\n"))
	if out := <-got; !strings.Contains(out, "new output\n") || strings.Contains(out, "a line") {
		t.Errorf("the read woken by the write: %q", out)
	}
}
