package app

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/lsp"
	"github.com/bridle-dev/bridle/sandbox/box"
	"github.com/bridle-dev/bridle/workspace"
)

// DoctorReport is what `bridle doctor` prints: the box's layers (with
// the file watcher's) and the language servers a session in the
// current directory would run.
type DoctorReport struct {
	box.Report
	Servers []lsp.Status `json:"language_servers"`
	// ServersErr says the "lsp" settings cannot be read: no server runs.
	ServersErr string `json:"language_servers_error,omitempty"`
	// Trust is the user's trust in the project settings of the current
	// directory: listed in trusted_projects, applied as accepted, and
	// what the user must be told (a file changed since it was accepted).
	Trust config.ProjectTrust `json:"project_trust"`
}

// Doctor reports which sandbox layers this machine has and what bridle
// does without each (`bridle doctor`), whether the file watcher can
// watch the current directory, and each language's server there.
func Doctor() DoctorReport {
	bx := box.New(box.Options{})
	defer bx.Close()
	r := DoctorReport{Report: bx.Report()}
	r.Layers = append(r.Layers, watcherLayer())
	dir, _ := os.Getwd()
	// Read-only: a report accepts nothing; the first session in a listed
	// directory records its file, and the report says it would.
	c := (&config.Loader{Pins: config.Pins{ReadOnly: true}}).For(dir)
	r.Trust = c.Settings.Trust
	servers, err := c.Servers()
	if err != nil {
		r.ServersErr = err.Error()
	}
	r.Servers = lsp.Statuses(servers, exec.LookPath)
	return r
}

// ServersString renders the language servers for a terminal.
func (r DoctorReport) ServersString() string {
	var b strings.Builder
	if r.ServersErr != "" {
		fmt.Fprintf(&b, "MISSING  no language server runs: %s\n", r.ServersErr)
	}
	for _, s := range r.Servers {
		detail := s.Detail
		if s.State == "found" {
			detail = s.Path
		}
		fmt.Fprintf(&b, "%-8s %-12s %s\n", s.State, s.Language, detail)
	}
	return b.String()
}

// TrustString renders the trust in this directory's project settings
// for a terminal.
func (r DoctorReport) TrustString() string {
	var b strings.Builder
	switch t := r.Trust; {
	case !t.Listed:
		b.WriteString("not trusted  this directory is not in your \"trusted_projects\": a project's providers, hooks and language servers' commands are not applied here\n")
	case t.Pending:
		fmt.Fprintf(&b, "trusted      %s: no record of its settings yet; they would be recorded as accepted, as they are then, at the first session here (bridle trust %s records them now)\n", t.Project, t.Project)
	case t.Applied:
		fmt.Fprintf(&b, "trusted      %s: its settings apply as you accepted them (bridle trust --list shows the records)\n", t.Project)
	default:
		fmt.Fprintf(&b, "NOT APPLIED  %s is in your \"trusted_projects\", but its providers, hooks and language servers' commands are not applied:\n", t.Project)
	}
	for _, n := range r.Trust.Notices {
		fmt.Fprintf(&b, "             %s\n", n)
	}
	return b.String()
}

// watcherLayer watches the current directory as a session would and says
// whether every directory could be watched.
func watcherLayer() box.Layer {
	l := box.Layer{Name: "file watcher",
		Without: "changes on disk are found by checking modification times when an output is used; listings and searches are not cached"}
	dir, err := os.Getwd()
	if err != nil {
		l.Detail = err.Error()
		return l
	}
	w, err := workspace.Watch([]string{dir}, workspace.WatchOptions{})
	if err != nil {
		l.Detail = err.Error()
		return l
	}
	defer w.Close()
	ready := w.WaitReady(10 * time.Second)
	switch {
	case w.Degraded() != "":
		l.Detail = w.Degraded()
	case !ready:
		l.Detail = "adding the watches of " + dir + " takes more than 10 s; until they are in place, modification times are checked"
	default:
		l.OK = true
		l.Detail = fmt.Sprintf("%d directories of %s watched (limit %s)", w.Watched(), dir, watchLimit())
	}
	return l
}
