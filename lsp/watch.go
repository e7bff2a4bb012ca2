package lsp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

// maxSynced is the largest file whose new text on disk is sent to a
// server that has it open; a larger one is closed instead.
const maxSynced = 8 << 20

// FilesChanged tells the running servers whose roots are in dirs (a
// session's directories) what the workspace's watcher saw change on
// disk: a file a server has open gets its text on disk (didChange), and
// every changed file it watches is named (didChangeWatchedFiles). paths
// nil (anything may have changed) is not passed on: a server cannot be
// told that. No server is started.
func (m *Manager) FilesChanged(dirs []string, paths []string) {
	if len(paths) == 0 {
		return
	}
	for _, srv := range m.runningIn(dirs) {
		select {
		case srv.batches <- paths:
		default:
			// The server is far behind (or stuck): this batch is lost to
			// it, as an overflow is to the watcher.
			srv.log.Warn("language server: a batch of changes on disk was dropped", "language", srv.Language, "root", srv.Root)
		}
	}
}

// runningIn are the running servers whose roots are in dirs.
func (m *Manager) runningIn(dirs []string) []*Server {
	m.mu.Lock()
	defer m.mu.Unlock()
	var servers []*Server
	for _, e := range m.entries {
		if !inAny(e.spec.root, dirs) {
			continue
		}
		if srv := e.peek(); srv != nil {
			servers = append(servers, srv)
		}
	}
	return servers
}

// changes passes the watcher's batches on to the server, in order, until
// it is gone: the watcher does not wait for a server.
func (s *Server) changes() {
	for {
		select {
		case paths := <-s.batches:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			s.filesChanged(ctx, paths)
			cancel()
		case <-s.Done():
			return
		}
	}
}

// inAny says whether dir is one of dirs or below one.
func inAny(dir string, dirs []string) bool {
	for _, d := range dirs {
		if dir == d || strings.HasPrefix(dir, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// peek returns the running server without counting a use.
func (e *entry) peek() *Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv != nil && e.srv.alive() {
		return e.srv
	}
	return nil
}

// filesChanged tells the server of files changed on disk.
func (s *Server) filesChanged(ctx context.Context, paths []string) {
	var events []*protocol.FileEvent
	for _, p := range paths {
		if !strings.HasPrefix(p, s.Root+string(filepath.Separator)) {
			continue
		}
		fi, err := os.Stat(p)
		if doc := s.docs.get(p); doc != nil && err == nil && fi.Mode().IsRegular() {
			s.syncOpen(ctx, p, doc, fi.Size())
		}
		if !s.watches(p) {
			continue
		}
		t := protocol.FileChangeTypeChanged
		switch {
		case err != nil:
			t = protocol.FileChangeTypeDeleted
		case fi.IsDir():
			continue
		case !s.seen(p):
			t = protocol.FileChangeTypeCreated
		}
		events = append(events, &protocol.FileEvent{Type: t, URI: uri.File(p)})
	}
	if len(events) > 0 {
		s.disk.Add(1)
		s.Notify(ctx, protocol.MethodWorkspaceDidChangeWatchedFiles, protocol.DidChangeWatchedFilesParams{Changes: events})
	}
}

// syncOpen gives the server the text on disk of a file it has open, when
// it differs from what it has.
func (s *Server) syncOpen(ctx context.Context, path string, doc *document, size int64) {
	if size > maxSynced {
		return
	}
	defer s.docs.lock(path)()
	data, err := os.ReadFile(path)
	if err != nil || string(data) == doc.text {
		return
	}
	if cur := s.docs.get(path); cur == nil || cur.text == string(data) {
		return
	}
	s.sendText(ctx, path, string(data))
}

// watches says whether the server asked to hear of path's changes: the
// patterns it registered, or, when it registered none, its files and
// root markers.
func (s *Server) watches(path string) bool {
	slash := filepath.ToSlash(path)
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if len(s.watch) == 0 {
		base := filepath.Base(path)
		for _, p := range s.files {
			if ok, _ := filepath.Match(p, base); ok {
				return true
			}
		}
		return false
	}
	for _, globs := range s.watch {
		for _, g := range globs {
			if ok, _ := doublestar.Match(g, slash); ok {
				return true
			}
			if ok, _ := doublestar.Match("**/"+strings.TrimPrefix(g, "**/"), slash); ok && !strings.HasPrefix(g, "/") {
				return true
			}
		}
	}
	return false
}

// seen says whether the server was told of path before (and records
// that it now is): the first change of a file is told as its creation,
// since the watcher does not tell them apart.
func (s *Server) seen(path string) bool {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.told == nil {
		s.told = map[string]bool{}
	}
	if s.told[path] {
		return true
	}
	if len(s.told) < 100000 {
		s.told[path] = true
	}
	return false
}
