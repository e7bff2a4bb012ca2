package tools

import (
	"io"
	"strings"
	"sync"
	"time"

	"github.com/bridle-dev/bridle/redact"
)

// A running command's output is shown to the user as it comes (Env.Live):
// the tail of it, redacted, at a bounded rate. The model still reads only
// the result, capped and redacted once at the end.
const (
	// liveEvery is the most often the tail is shown.
	liveEvery = 250 * time.Millisecond
	// liveWindow is how much of the output's end is kept and redacted for
	// each showing: far more than is shown, so that a secret or a key
	// block that reaches into the lines shown starts inside it.
	liveWindow = 64 << 10
	// liveLines and liveBytes bound what is shown.
	liveLines = 40
	liveBytes = 4 << 10
)

// liveTail keeps the end of a command's output for showing, in a ring
// written in place: a write costs what it writes, however much the
// command has printed.
type liveTail struct {
	mu      sync.Mutex
	out     *outputRing // nil until the first write
	changed bool
}

// Write implements io.Writer; it never fails.
func (l *liveTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.out == nil {
		l.out = newOutputRing(liveWindow)
	}
	l.out.Write(p)
	l.changed = len(p) > 0 || l.changed
	return len(p), nil
}

// snapshot is the tail to show, redacted, and whether it changed since the
// last one.
func (l *liveTail) snapshot(env *Env) (string, bool) {
	l.mu.Lock()
	if !l.changed {
		l.mu.Unlock()
		return "", false
	}
	l.changed = false
	s := l.out.text(l.out.kept(), l.out.total)
	l.mu.Unlock()
	return tailOf(redactLive(env.Redactor, s), liveLines, liveBytes), true
}

// redactLive redacts the end of a running command's output, s, which may
// end inside a line: the lines it has ended whole, and of the line it
// has not, only what redact.Chat passes on, which holds back what more
// text could make part of a secret (a value printed slowly: "pw: Zq9x"
// shows "pw: "). A line inside a key block is not shown at all.
func redactLive(r *redact.Redactor, s string) string {
	i := strings.LastIndexByte(s, '\n') + 1
	lines, line := s[:i], s[i:]
	out := r.Redact(lines)
	if line == "" || redact.InKeyBlock(lines) {
		return out
	}
	return out + redact.NewChat(r).Write(line)
}

// tailOf is the last lines of s: at most n lines and max bytes, cut at a
// line's start, or the end of the last line alone when it is longer.
func tailOf(s string, n, max int) string {
	s = strings.TrimRight(s, "\n")
	start := len(s)
	for lines := 0; lines < n && start > 0; lines++ {
		from := strings.LastIndexByte(s[:start-1], '\n') + 1 // 0 when none
		if start < len(s) && len(s)-from > max {
			break
		}
		start = from
	}
	if len(s)-start > max {
		start = len(s) - max
		for start < len(s) && s[start]&0xC0 == 0x80 {
			start++ // not inside a character
		}
	}
	return s[start:]
}

// startLive tees a command's output into a tail shown through show every
// liveEvery while it changes. stop ends the showing; the result follows.
func startLive(env *Env, show func(string)) (w io.Writer, stop func()) {
	l := &liveTail{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(liveEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if text, ok := l.snapshot(env); ok && text != "" {
					show(text)
				}
			}
		}
	}()
	return l, func() {
		close(done)
		wg.Wait()
	}
}
