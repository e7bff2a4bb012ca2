package lsp

import (
	"context"
	"fmt"
	"io/fs"
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

// Files is how bridle reads the files of a server's root on disk
// (confine.Root): never through a link out of the root, nor a hidden
// path, a pipe or a device.
type Files interface {
	ReadFile(path string, max int64) ([]byte, error)
	Lstat(path string) (fs.FileInfo, error)
	Close() error
}

// filesChanged tells the server of files changed on disk. Only the files
// it has open or watches are looked at, and only through its confined
// reader: what an open file holds now is sent to the server, whose
// diagnostics quote it to the model.
func (s *Server) filesChanged(ctx context.Context, paths []string) {
	var mine []string
	for _, p := range paths {
		if strings.HasPrefix(p, s.Root+string(filepath.Separator)) && (s.docs.get(p) != nil || s.watches(p)) {
			mine = append(mine, p)
		}
	}
	if len(mine) == 0 {
		return
	}
	var disk Files = refused{}
	if s.onDisk != nil {
		f, err := s.onDisk(s.Root)
		if err != nil {
			s.log.Warn("language server: the files changed on disk cannot be read", "language", s.Language, "root", s.Root, "err", err)
		} else {
			disk = f
			defer f.Close()
		}
	}
	var events []*protocol.FileEvent
	for _, p := range mine {
		if doc := s.docs.get(p); doc != nil {
			s.syncOpen(ctx, disk, p, doc)
		}
		if !s.watches(p) {
			continue
		}
		t := protocol.FileChangeTypeChanged
		fi, err := disk.Lstat(p)
		switch {
		case err != nil:
			// Gone, or no longer one the server may see (a hidden
			// path, a directory on the way that leads out): to it,
			// deleted.
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
// it differs from what it has. A file the confined reader refuses (gone,
// a link out of the root, a hidden path, not a regular file, larger than
// maxSynced) is closed: the server keeps no text of it that bridle did
// not read.
func (s *Server) syncOpen(ctx context.Context, disk Files, path string, doc *document) {
	defer s.docs.lock(path)()
	data, err := disk.ReadFile(path, maxSynced)
	if err != nil {
		if s.docs.get(path) != nil {
			s.closeDoc(ctx, path)
		}
		return
	}
	if string(data) == doc.text {
		return
	}
	if cur := s.docs.get(path); cur == nil || cur.text == string(data) {
		return
	}
	s.sendText(ctx, path, string(data))
}

// closeDoc tells the server path is closed (didClose) and forgets it.
func (s *Server) closeDoc(ctx context.Context, path string) {
	s.docs.close(path)
	s.Notify(ctx, protocol.MethodTextDocumentDidClose, protocol.DidCloseTextDocumentParams{
		TextDocument: protocol.TextDocumentIdentifier{URI: protocol.DocumentURI(uri.File(path))}})
}

// refused is the reader when there is none: it reads nothing.
type refused struct{}

func (refused) ReadFile(path string, _ int64) ([]byte, error) {
	return nil, fmt.Errorf("%s: no confined reader for the files on disk", path)
}

func (refused) Lstat(path string) (fs.FileInfo, error) {
	return nil, fmt.Errorf("%s: no confined reader for the files on disk", path)
}

func (refused) Close() error { return nil }

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
