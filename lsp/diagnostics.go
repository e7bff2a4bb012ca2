package lsp

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/protocol"
)

// Bounds of what bridle keeps of a server's diagnostics.
const (
	// MaxPerFile is how many diagnostics of one file are kept; the rest
	// are counted.
	MaxPerFile = 500
	// maxFiles is how many files' diagnostics are kept: a server that
	// publishes for more loses the oldest of those not open.
	maxFiles = 5000
)

// fileDiags are a file's diagnostics as a server last gave them.
type fileDiags struct {
	// version is the document's version they are for (0: the file is
	// not open, or the server did not say).
	version int32
	items   []protocol.Diagnostic
	// cut counts the items over MaxPerFile that were dropped.
	cut int
	// seq orders publications.
	seq uint64
}

// diagnostics are what a server published, or answered when asked, per
// file, within bounds; waiters hear of each new publication.
type diagnostics struct {
	max int
	// current is the version of a file bridle last sent (0: not open):
	// a publication without a version is taken for it, and one with a
	// version bridle never sent is dropped.
	current func(path string) int32

	mu    sync.Mutex
	files map[string]*fileDiags
	// order lists the files in the order they were first published, for
	// eviction past maxFiles.
	order []string
	seq   uint64
	// changed is closed, and replaced, at each publication.
	changed chan struct{}
	// wrong counts publications for versions never sent.
	wrong int
	// versioned says the server has said which version a publication
	// is for: one that never does is waited on until it is quiet.
	versioned bool
}

// quiet is how long a server that does not say the version of its
// publications must say nothing more of a file before its last one is
// taken for the version sent: typescript-language-server publishes a
// file's syntactic, semantic and suggestion diagnostics one after the
// other (each debounced by 50 ms), with no version.
const quiet = 300 * time.Millisecond

func newDiagnostics(max int, current func(string) int32) *diagnostics {
	if max <= 0 {
		max = MaxPerFile
	}
	return &diagnostics{max: max, current: current, files: map[string]*fileDiags{}, changed: make(chan struct{})}
}

// publish keeps a file's diagnostics. version 0 means the server did not
// say which version they are for.
func (d *diagnostics) publish(path string, version int32, items []protocol.Diagnostic) {
	cur := d.current(path)
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case version == 0:
		version = cur
	case version > cur:
		// A version bridle never sent: the server is confused, and these
		// cannot be matched to any text.
		d.wrong++
		return
	default:
		d.versioned = true
	}
	if old := d.files[path]; old != nil && old.version > version {
		return // stale: a later version's are kept
	}
	f := &fileDiags{version: version, seq: d.seq + 1}
	d.seq++
	if len(items) > d.max {
		f.cut = len(items) - d.max
		items = items[:d.max]
	}
	f.items = slices.Clone(items)
	if _, ok := d.files[path]; !ok {
		if len(d.files) >= maxFiles {
			d.evict()
		}
		d.order = append(d.order, path)
	}
	d.files[path] = f
	close(d.changed)
	d.changed = make(chan struct{})
}

// evict drops the diagnostics of the first file published that is not
// open; open ones go back in line.
func (d *diagnostics) evict() {
	for range len(d.order) {
		p := d.order[0]
		d.order = d.order[1:]
		f := d.files[p]
		if f == nil {
			continue
		}
		if d.current(p) != 0 {
			d.order = append(d.order, p)
			continue
		}
		delete(d.files, p)
		return
	}
}

// get returns a file's diagnostics if they are for version or later.
func (d *diagnostics) get(path string, version int32) (fileDiags, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f := d.files[path]
	if f == nil || f.version < version {
		return fileDiags{}, false
	}
	return *f, true
}

// wait returns a file's diagnostics for version (or a later one) once the
// server has given them, or false when ctx ends or the server is gone
// (gone closed) first.
func (d *diagnostics) wait(ctx context.Context, gone <-chan struct{}, path string, version int32) (fileDiags, bool) {
	for {
		d.mu.Lock()
		changed := d.changed
		d.mu.Unlock()
		if f, ok := d.get(path, version); ok {
			return f, true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fileDiags{}, false
		case <-gone:
			return fileDiags{}, false
		}
	}
}

// settle returns f, or the file's later publications, once the server
// has said nothing more of it for the quiet period (or ctx ends): what a
// server that gives no versions said last of the version sent.
func (d *diagnostics) settle(ctx context.Context, gone <-chan struct{}, path string, f fileDiags) fileDiags {
	d.mu.Lock()
	versioned := d.versioned
	d.mu.Unlock()
	if versioned {
		return f
	}
	t := time.NewTimer(quiet)
	defer t.Stop()
	for {
		d.mu.Lock()
		changed := d.changed
		last := d.files[path]
		d.mu.Unlock()
		if last != nil && last.seq > f.seq {
			f = *last
			t.Reset(quiet)
		}
		select {
		case <-changed:
		case <-t.C:
			return f
		case <-ctx.Done():
			return f
		case <-gone:
			return f
		}
	}
}

// snapshot is every file's diagnostics now.
func (d *diagnostics) snapshot() map[string]fileDiags {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]fileDiags, len(d.files))
	for p, f := range d.files {
		out[p] = *f
	}
	return out
}

// since are the files whose diagnostics were published after snap was
// taken, among those snap holds (a file never published before has no
// baseline to tell what is new).
func (d *diagnostics) since(snap map[string]fileDiags) map[string]fileDiags {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]fileDiags{}
	for p, f := range d.files {
		if old, ok := snap[p]; ok && f.seq > old.seq {
			out[p] = *f
		}
	}
	return out
}

// key identifies a diagnostic whatever its position: an edit above it
// moves it without making it new.
func key(x protocol.Diagnostic) string {
	return fmt.Sprintf("%v\x00%s\x00%v\x00%s", severity(x), x.Source, x.Code, x.Message)
}

// introduced are the diagnostics of after that before did not have (as
// many of each as after has more), in after's order.
func introduced(before, after []protocol.Diagnostic) []protocol.Diagnostic {
	count := map[string]int{}
	for _, x := range before {
		count[key(x)]++
	}
	var out []protocol.Diagnostic
	for _, x := range after {
		if k := key(x); count[k] > 0 {
			count[k]--
			continue
		}
		out = append(out, x)
	}
	return out
}

// severity is a diagnostic's, an error when the server did not say.
func severity(x protocol.Diagnostic) protocol.DiagnosticSeverity {
	if x.Severity == 0 {
		return protocol.DiagnosticSeverityError
	}
	return x.Severity
}

// shown says whether a diagnostic is worth the model's tokens: errors and
// warnings; hints and information are not shown.
func shown(x protocol.Diagnostic) bool {
	return severity(x) <= protocol.DiagnosticSeverityWarning
}

// problem is a diagnostic and its file.
type problem struct {
	path string
	d    protocol.Diagnostic
}

// Bounds of what one result says.
const (
	maxLines   = 20
	maxMessage = 240
)

// lines renders problems as the model reads them, errors first, each
// `path:line:col severity message` (path as show gives it; line and
// column from 1), at most maxLines and a count of the rest.
func lines(problems []problem, show func(string) string) []string {
	slices.SortStableFunc(problems, func(a, b problem) int {
		return cmp.Or(cmp.Compare(severity(a.d), severity(b.d)), cmp.Compare(a.path, b.path),
			cmp.Compare(a.d.Range.Start.Line, b.d.Range.Start.Line), cmp.Compare(a.d.Range.Start.Character, b.d.Range.Start.Character))
	})
	var out []string
	for i, p := range problems {
		if i == maxLines {
			out = append(out, fmt.Sprintf("… and %d more", len(problems)-maxLines))
			break
		}
		msg, _, _ := strings.Cut(strings.TrimSpace(p.d.Message), "\n")
		if len(msg) > maxMessage {
			msg = msg[:maxMessage] + "…"
		}
		out = append(out, fmt.Sprintf("%s:%d:%d %s %s", show(p.path), p.d.Range.Start.Line+1, p.d.Range.Start.Character+1,
			severityWord(severity(p.d)), msg))
	}
	return out
}

func severityWord(s protocol.DiagnosticSeverity) string {
	switch s {
	case protocol.DiagnosticSeverityError:
		return "error"
	case protocol.DiagnosticSeverityWarning:
		return "warning"
	case protocol.DiagnosticSeverityInformation:
		return "info"
	}
	return "hint"
}
