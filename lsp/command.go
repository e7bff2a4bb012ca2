package lsp

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// maxRechecked bounds the open files whose diagnostics are asked again
// after a command.
const maxRechecked = 20

// Changed tells the running servers of the session's directories that a
// command changed these files on disk, before the command's result is
// given, and returns what the model should read of it: the diagnostics
// the changes introduced ("" when no running server serves a changed
// file). It starts no server: one not running has no earlier state to
// compare with. The files a server has open are asked again (a new
// version, its text as on disk now), so the wait is for their answer and
// no longer, at most the settings' wait_seconds; a file the server had
// reported on before and reports on again meanwhile is compared too.
func (w *Workspace) Changed(ctx context.Context, paths []string) string {
	cfg := w.m.cfg.Settings(w.dirs[0])
	wait := cfg.LSPSection().Wait()
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var out []string
	for _, srv := range w.m.runningIn(w.dirs) {
		out = append(out, w.afterCommand(ctx, srv, paths, wait)...)
	}
	return strings.Join(out, "\n")
}

// afterCommand is one server's part of a command's result.
func (w *Workspace) afterCommand(ctx context.Context, srv *Server, paths []string, wait time.Duration) []string {
	mine := false
	for _, p := range paths {
		if strings.HasPrefix(p, srv.Root+string(filepath.Separator)) && srv.watches(p) {
			mine = true
			break
		}
	}
	if !mine {
		srv.filesChanged(ctx, paths)
		return nil
	}
	// What the server said before, of the files it has open (as of their
	// version) and of the others it reported on.
	open := srv.docs.paths()
	slices.Sort(open)
	if len(open) > maxRechecked {
		open = open[:maxRechecked]
	}
	type baseline struct {
		version int32
		diags   fileDiags
		known   bool
	}
	before := map[string]baseline{}
	for _, p := range open {
		if doc := srv.docs.get(p); doc != nil {
			f, ok := srv.diags.get(p, doc.version)
			before[p] = baseline{doc.version, f, ok}
		}
	}
	others := srv.diags.snapshot()
	for p := range before {
		delete(others, p)
	}
	srv.filesChanged(ctx, paths)
	var problems []problem
	late, checked := 0, 0
	for _, p := range open {
		if srv.docs.get(p) == nil {
			continue // closed: no longer readable on disk
		}
		checked++
		b := before[p]
		v, err := srv.recheck(ctx, p, b.version)
		if err != nil {
			late++
			continue
		}
		f, ok, err := srv.diagnosticsOf(ctx, p, v)
		if err != nil || !ok {
			late++
			continue
		}
		if !b.known {
			continue // nothing to compare with
		}
		problems = append(problems, introducedIn(p, b.diags, f)...)
	}
	problems = append(problems, republished(srv, others)...)
	name := srv.name()
	var out []string
	switch {
	case len(problems) > 0:
		out = append(out, w.newProblems(name, problems, "after this command")...)
	case checked > 0 && late == 0:
		out = append(out, fmt.Sprintf("%s: no new problems after this command (%s checked).", name, count(checked, "open file")))
	}
	if late > 0 {
		out = append(out, fmt.Sprintf("%s did not give the diagnostics of %s within %v%s.", name, count(late, "open file"), wait, loading(srv)))
	}
	return out
}

// recheck gives the server path's text again, as a new version, when it
// still has version (a command's change on disk gave it a later one
// already): its diagnostics for the version returned are of the files as
// they are now.
func (s *Server) recheck(ctx context.Context, path string, version int32) (int32, error) {
	defer s.docs.lock(path)()
	doc := s.docs.get(path)
	if doc == nil {
		return 0, fmt.Errorf("%s is not open", path)
	}
	if doc.version != version {
		return doc.version, nil
	}
	return s.sendText(ctx, path, doc.text)
}

// count is n things, the noun plural when n is not 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// introducedIn are the problems worth showing that file's diagnostics
// now have and before did not.
func introducedIn(path string, before, now fileDiags) []problem {
	var out []problem
	for _, d := range introduced(before.items, now.items) {
		if shown(d) {
			out = append(out, problem{path, d})
		}
	}
	return out
}

// republished are the problems introduced in the files the server
// published again since others was taken (among those it holds).
func republished(srv *Server, others map[string]fileDiags) []problem {
	var out []problem
	for p, now := range srv.diags.since(others) {
		out = append(out, introducedIn(p, others[p], now)...)
	}
	return out
}

// newProblems words problems a change introduced: a heading, then the
// lines.
func (w *Workspace) newProblems(name string, problems []problem, when string) []string {
	noun := "problem"
	if len(problems) > 1 {
		noun = "problems"
	}
	return append([]string{fmt.Sprintf("%s: %d new %s %s:", name, len(problems), noun, when)}, lines(problems, w.show)...)
}
