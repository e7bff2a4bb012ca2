package lsp

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// FileText is one file of an edit of several (a rename): what it held
// and holds now.
type FileText struct {
	Path          string
	Before, After []byte
}

// EditedFiles is Edited for an edit of several files at once: each
// server is given every file's text before (where it does not have it)
// and waits for those diagnostics, then every file's new text, so that
// what it says is of the files together (a rename's declaration and its
// uses), never of a state half renamed. It returns the diagnostics the
// edit introduced, bounded as an edit's; "" when no server serves the
// files. A server not running yet is started, as for an edit.
func (w *Workspace) EditedFiles(ctx context.Context, files []FileText) string {
	cfg := w.m.cfg.Settings(w.dirs[0])
	servers, err := cfg.Servers()
	if err != nil {
		return ""
	}
	wait := cfg.LSPSection().Wait()
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	byEntry := map[*entry][]FileText{}
	var order []*entry
	for _, f := range files {
		for _, e := range w.entriesFor(cfg, servers, f.Path) {
			if byEntry[e] == nil {
				order = append(order, e)
			}
			byEntry[e] = append(byEntry[e], f)
		}
	}
	var out []string
	for _, e := range order {
		srv, note, err := e.server(ctx)
		if note != "" {
			out = append(out, note)
		}
		name := e.name()
		switch {
		case errors.Is(err, errStarting):
			out = append(out, fmt.Sprintf("%s is starting; the diagnostics of this edit will not be reported.", name))
			continue
		case err != nil || srv.caps.noSync:
			continue
		}
		out = append(out, w.editFiles(ctx, srv, byEntry[e], wait)...)
	}
	return strings.Join(out, "\n")
}

// name is the entry's program's name, for messages.
func (e *entry) name() string { return filepath.Base(e.spec.program) }

// editFiles is one server's part of EditedFiles.
func (w *Workspace) editFiles(ctx context.Context, srv *Server, files []FileText, wait time.Duration) []string {
	slices.SortFunc(files, func(a, b FileText) int { return strings.Compare(a.Path, b.Path) })
	for _, f := range files {
		// In path order: edits of several files never wait for each
		// other in a circle.
		defer srv.docs.lock(f.Path)()
	}
	name := srv.name()
	before := map[string]fileDiags{}
	known := map[string]bool{}
	for _, f := range files {
		doc := srv.docs.get(f.Path)
		v := int32(0)
		if doc != nil && doc.text == string(f.Before) {
			v = doc.version
		} else {
			var err error
			if v, err = srv.sendText(ctx, f.Path, string(f.Before)); err != nil {
				return []string{fmt.Sprintf("%s: no diagnostics for this edit: %v", name, err)}
			}
		}
		d, ok, err := srv.diagnosticsOf(ctx, f.Path, v)
		if err != nil {
			return []string{fmt.Sprintf("%s: no diagnostics for this edit: %v", name, err)}
		}
		before[f.Path], known[f.Path] = d, ok
	}
	others := srv.diags.snapshot()
	for _, f := range files {
		delete(others, f.Path)
	}
	versions := map[string]int32{}
	for _, f := range files {
		v, err := srv.sendText(ctx, f.Path, string(f.After))
		if err != nil {
			return []string{fmt.Sprintf("%s: no diagnostics for this edit: %v", name, err)}
		}
		versions[f.Path] = v
	}
	var problems []problem
	late := 0
	for _, f := range files {
		d, ok, err := srv.diagnosticsOf(ctx, f.Path, versions[f.Path])
		if err != nil || !ok {
			late++
			continue
		}
		if !known[f.Path] {
			continue
		}
		problems = append(problems, introducedIn(f.Path, before[f.Path], d)...)
	}
	problems = append(problems, republished(srv, others)...)
	var out []string
	switch {
	case len(problems) > 0:
		out = append(out, w.newProblems(name, problems, "after this edit")...)
	case late == 0:
		out = append(out, fmt.Sprintf("%s: no new problems after this edit (%s).", name, count(len(files), "file")))
	}
	if late > 0 {
		out = append(out, fmt.Sprintf("%s did not give the diagnostics of %s within %v%s.", name, count(late, "file"), wait, loading(srv)))
	}
	return out
}
