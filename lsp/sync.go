package lsp

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"

	"github.com/sourcegraph/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"
)

// documents are the files a server was given the text of (didOpen), with
// the version and text it has.
type documents struct {
	mu   sync.Mutex
	open map[string]*document
	// locks keep one file's changes in order, across sessions.
	locks map[string]*sync.Mutex
}

type document struct {
	version int32
	text    string
	// disk is the server's count of changes on disk (Server.disk) when
	// the text was sent: a later count means its last diagnostics may
	// not say what those changes did.
	disk uint64
}

// versionOf is the version of path the server was last sent (0: none).
func (d *documents) versionOf(path string) int32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if doc := d.open[path]; doc != nil {
		return doc.version
	}
	return 0
}

// lock takes the file's lock: its changes are sent and waited for one
// at a time.
func (d *documents) lock(path string) func() {
	d.mu.Lock()
	if d.locks == nil {
		d.locks = map[string]*sync.Mutex{}
	}
	l := d.locks[path]
	if l == nil {
		l = &sync.Mutex{}
		d.locks[path] = l
	}
	d.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// get returns what the server has of path (nil: not open).
func (d *documents) get(path string) *document {
	d.mu.Lock()
	defer d.mu.Unlock()
	if doc := d.open[path]; doc != nil {
		c := *doc
		return &c
	}
	return nil
}

func (d *documents) set(path string, version int32, text string, disk uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.open == nil {
		d.open = map[string]*document{}
	}
	d.open[path] = &document{version: version, text: text, disk: disk}
}

// paths are the files the server has open.
func (d *documents) paths() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.open))
	for p := range d.open {
		out = append(out, p)
	}
	return out
}

// close forgets path: the server was never given it.
func (d *documents) close(path string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.open, path)
}

// languageIDs are LSP's language identifiers by file extension, where the
// server's language name is not one (typescript serves several).
var languageIDs = map[string]string{
	".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "typescriptreact",
	".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascriptreact",
	".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp",
	".py": "python", ".pyi": "python", ".rs": "rust", ".go": "go",
}

func (s *Server) languageID(path string) string {
	if id := languageIDs[strings.ToLower(filepath.Ext(path))]; id != "" {
		return id
	}
	return s.Language
}

// fullChange is a change that replaces the whole text (protocol's change
// event always carries a range, which means an insertion).
type fullChange struct {
	Text string `json:"text"`
}

type didChangeParams struct {
	TextDocument   protocol.VersionedTextDocumentIdentifier `json:"textDocument"`
	ContentChanges []fullChange                             `json:"contentChanges"`
}

// sendText gives the server path's text: didOpen the first time, then
// didChange with the whole text and the next version, which it returns.
func (s *Server) sendText(ctx context.Context, path, text string) (int32, error) {
	u := protocol.DocumentURI(uri.File(path))
	doc := s.docs.get(path)
	if doc == nil {
		// Recorded first: the server may publish for it before Notify
		// returns.
		s.docs.set(path, 1, text, s.disk.Load())
		err := s.Notify(ctx, protocol.MethodTextDocumentDidOpen, protocol.DidOpenTextDocumentParams{
			TextDocument: protocol.TextDocumentItem{URI: u, LanguageID: protocol.LanguageIdentifier(s.languageID(path)), Version: 1, Text: text}})
		if errors.As(err, new(notSent)) {
			s.docs.close(path)
		}
		return 1, err
	}
	v := doc.version + 1
	s.docs.set(path, v, text, s.disk.Load())
	err := s.Notify(ctx, protocol.MethodTextDocumentDidChange, didChangeParams{
		TextDocument:   protocol.VersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: u}, Version: v},
		ContentChanges: []fullChange{{Text: text}}})
	if errors.As(err, new(notSent)) {
		s.docs.set(path, doc.version, doc.text, doc.disk)
	}
	return v, err
}

// pulled is textDocument/diagnostic's answer.
type pulled struct {
	Kind  string                `json:"kind"`
	Items []protocol.Diagnostic `json:"items"`
}

// diagnosticsOf waits for path's diagnostics for version: asked for
// (textDocument/diagnostic) where the server answers that, else as
// published. false: not given before ctx ended; an error: the server
// failed the request.
func (s *Server) diagnosticsOf(ctx context.Context, path string, version int32) (fileDiags, bool, error) {
	if s.caps.pull {
		var res pulled
		err := s.Request(ctx, "textDocument/diagnostic", map[string]any{
			"textDocument": protocol.TextDocumentIdentifier{URI: protocol.DocumentURI(uri.File(path))}}, &res)
		switch {
		case err != nil && ctx.Err() == nil && !errors.Is(err, ErrTimeout):
			return fileDiags{}, false, err
		case err == nil && res.Kind == "full":
			// The answer is for what the server has now: the version sent.
			s.diags.publish(path, version, res.Items)
		}
	}
	f, ok := s.diags.wait(ctx, s.Done(), path, version)
	if ok && !s.caps.pull {
		f = s.diags.settle(ctx, s.Done(), path, f)
	}
	if !ok && !s.alive() {
		return f, false, s.connErr(jsonrpc2.ErrClosed)
	}
	return f, ok, nil
}

// change is one edit as the server saw it: the file's diagnostics before
// (ok false when the server did not give them in time) and after.
type change struct {
	before, after       fileDiags
	haveBefore, haveNow bool
	// others are the other files' diagnostics as they were before the
	// change: those published again by the time the file's came are
	// compared with them.
	others map[string]fileDiags
	// version is the one sent for after.
	version int32
	// disk says files changed on disk after before's diagnostics were
	// asked for: what the edit introduced includes what those changes did.
	disk bool
}

// edit gives the server path's text before (nil: the file is new) and
// then after, and waits, as long as ctx lets it, for the diagnostics of
// each. Only the file's lock is held: edits of other files, from other
// sessions, go on meanwhile.
func (s *Server) edit(ctx context.Context, path string, before, after []byte) (change, error) {
	defer s.docs.lock(path)()
	var c change
	doc := s.docs.get(path)
	switch {
	case before == nil && doc == nil:
		c.haveBefore = true // a new file: nothing was wrong with it
	case doc != nil && before != nil && doc.text != string(before):
		// The server has other text (the disk changed under it): give it
		// what the edit started from, first.
		fallthrough
	case doc == nil:
		v, err := s.sendText(ctx, path, string(before))
		if err != nil {
			return c, err
		}
		if c.before, c.haveBefore, err = s.diagnosticsOf(ctx, path, v); err != nil {
			return c, err
		}
	default:
		var err error
		if c.before, c.haveBefore, err = s.diagnosticsOf(ctx, path, doc.version); err != nil {
			return c, err
		}
		c.disk = doc.disk != s.disk.Load()
	}
	if ctx.Err() != nil {
		// The wait is over: the new text is sent by a later call (the
		// server's differs from the file's, see above).
		return c, nil
	}
	c.others = s.diags.snapshot()
	delete(c.others, path)
	v, err := s.sendText(ctx, path, string(after))
	if err != nil {
		return c, err
	}
	c.version = v
	c.after, c.haveNow, err = s.diagnosticsOf(ctx, path, v)
	return c, err
}

// Sync gives the server path's text if it does not have it (didOpen, or
// didChange with the next version) and returns the version it has: a
// request about the file is then about this text.
func (s *Server) Sync(ctx context.Context, path string, text []byte) (int32, error) {
	defer s.docs.lock(path)()
	if doc := s.docs.get(path); doc != nil && doc.text == string(text) {
		return doc.version, nil
	}
	return s.sendText(ctx, path, string(text))
}
