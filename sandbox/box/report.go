package box

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Layer is one confinement layer and whether this machine has it.
type Layer struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Detail says what was found (an ABI version, an error).
	Detail string `json:"detail,omitempty"`
	// Without says what bridle does when the layer is missing.
	Without string `json:"without,omitempty"`
}

// Report is what `bridle doctor` prints and initialize's _meta carries.
type Report struct {
	Layers []Layer `json:"layers"`
}

// MissingLayers names the layers this machine lacks, with what bridle does
// instead: for initialize's _meta and tool results.
func (r Report) MissingLayers() []string {
	var out []string
	for _, l := range r.Layers {
		if !l.OK {
			out = append(out, l.Name+": "+l.Without)
		}
	}
	return out
}

// Unconfined says why commands on this machine are not kept in: they
// can write outside the workspace (neither Landlock nor the read-only
// root) or reach the network (no network namespace). It is "" when the
// box keeps them in; full-auto asks once before such commands run.
func (r Report) Unconfined() string {
	ok := map[string]bool{}
	for _, l := range r.Layers {
		ok[l.Name] = l.OK
	}
	var why []string
	if !ok["landlock"] && !ok["read-only root"] {
		why = append(why, "commands can write anywhere this user can")
	}
	if !ok["network namespace"] {
		why = append(why, "commands share the host network")
	}
	return strings.Join(why, "; ")
}

// KeepsServersOut says why a language server would not be kept in here
// ("" when it would): as Unconfined for commands, and also when hidden
// paths are not hidden. A server is not asked about as a command is: it
// starts on an edit and runs the repository's code, so it runs only
// where the box holds it.
func (r Report) KeepsServersOut() string {
	why := r.Unconfined()
	for _, l := range r.Layers {
		if l.Name == "hidden paths" && !l.OK {
			why = strings.TrimPrefix(why+"; bridle's own files and the credential stores are not hidden", "; ")
		}
	}
	return why
}

// String renders the report for a terminal.
func (r Report) String() string {
	var b strings.Builder
	for _, l := range r.Layers {
		mark := "ok     "
		if !l.OK {
			mark = "MISSING"
		}
		fmt.Fprintf(&b, "%s  %-18s %s\n", mark, l.Name, l.Detail)
		if !l.OK && l.Without != "" {
			fmt.Fprintf(&b, "         %-18s without it: %s\n", "", l.Without)
		}
	}
	return b.String()
}

// Report probes this machine by running a confined command and says which
// layers it has. It takes a few milliseconds.
func (b *Box) Report() Report {
	dir, err := os.MkdirTemp("", "bridle-doctor-")
	if err != nil {
		return Report{Layers: []Layer{{Name: "box", Detail: err.Error(), Without: "commands cannot run"}}}
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// One hidden directory, so the report shows whether hiding works.
	hidden := filepath.Join(os.TempDir(), filepath.Base(dir)+".hidden")
	if err := os.Mkdir(hidden, 0o700); err == nil {
		defer os.Remove(hidden)
	}
	out, err := b.Run(ctx, Spec{Command: probeCommand, Dir: dir, Writable: []string{dir}, Processes: 1024, MemoryBytes: 1 << 30,
		Hidden: []string{hidden}, Output: discard{}})
	return b.layers(out, err)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func has(list []string, prefix string) (string, bool) {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return s, true
		}
	}
	return "", false
}
