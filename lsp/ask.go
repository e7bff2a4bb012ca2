package lsp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf16"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/bridle-dev/bridle/config"
)

// The questions the code tools (package tools) ask the language servers (Query.Op).
const (
	OpDiagnostics = "diagnostics"
	OpDefinition  = "definition"
	OpReferences  = "references"
	OpHover       = "hover"
	OpSymbols     = "symbols"
	// OpRename asks for the edits of a rename (Answer.Edits); bridle
	// applies them through its own edit path, never the server.
	OpRename = "rename"
)

// Query is one question to the language server of a file, or of the
// workspace (Path "").
type Query struct {
	Op string
	// Path is absolute; Text its content as the tool read it, which the
	// server is given when it does not have the file open.
	Path string
	Text []byte
	// Line and Column (from 1, Column in characters) are the position
	// asked about.
	Line, Column int
	// Query is a workspace symbol query; Severity the lowest severity of
	// the diagnostics wanted ("error", "warning", "info", "hint");
	// NewName a rename's.
	Query, Severity, NewName string
}

// TextEdit is one replacement of a rename: the range from Start to End
// (lines from 0, columns in UTF-16 units from 0) becomes NewText.
type TextEdit struct {
	StartLine, StartCol16, EndLine, EndCol16 int
	NewText                                  string
}

// Item is one place an answer names.
type Item struct {
	// Path is absolute; Line is from 1; Col16 is the server's column, in
	// UTF-16 units from 0 (the tools make it a character column).
	Path  string
	Line  int
	Col16 int
	// Label is what is there: a symbol's kind and name, a diagnostic's
	// severity and message; Depth nests a symbol in its parent's.
	Label string
	Depth int
}

// Answer is a server's answer.
type Answer struct {
	// Server is the program that answered (gopls).
	Server string
	Items  []Item
	// Text is hover's.
	Text string
	// Note says what the answer may lack (a server still loading) or a
	// failure not said yet.
	Note string
	// Edits are a rename's, by absolute path.
	Edits map[string][]TextEdit
}

// Offered says whether a language server is found for the session's
// workspace: one that is not turned off, whose program is found, and
// whose root markers or files are at the top of one of the session's
// directories. The code tools are offered then only, so a workspace no
// server serves sees the tools it saw before. It is asked at every model
// call: the answer is kept for a second (reading the settings stats
// their files), and for as long as the settings' reading is the same.
func (w *Workspace) Offered() bool {
	if w.m.unconfined() != "" {
		return false // no server could start: the tools would only fail
	}
	w.mu.Lock()
	if w.offeredKnown && time.Since(w.offeredAt) < time.Second {
		defer w.mu.Unlock()
		return w.offered
	}
	w.mu.Unlock()
	cfg := w.m.cfg.Settings(w.dirs[0])
	w.mu.Lock()
	if w.offeredKnown && w.offeredFor == cfg.Version {
		w.offeredAt = time.Now()
		defer w.mu.Unlock()
		return w.offered
	}
	w.mu.Unlock()
	offered := len(w.topServers(cfg)) > 0
	w.mu.Lock()
	w.offered, w.offeredFor, w.offeredKnown, w.offeredAt = offered, cfg.Version, true, time.Now()
	w.mu.Unlock()
	return offered
}

// topServers are the entries of the servers found for the top of the
// session's directories (made if need be; none is started).
func (w *Workspace) topServers(cfg *config.Config) []*entry {
	servers, err := cfg.Servers()
	if err != nil {
		return nil
	}
	var out []*entry
	for _, dir := range w.dirs {
		names, _ := readNames(dir, 1000)
		for _, s := range servers {
			if s.Off != "" || !servesAny(s, names) {
				continue
			}
			program, err := Find(s, w.m.cfg.Look)
			if err != nil {
				continue
			}
			e, err := w.m.entryFor(s, program, dir, cfg.LSPSection())
			if err != nil {
				continue
			}
			out = append(out, e)
		}
	}
	return out
}

// readNames are the names of up to max entries of dir.
func readNames(dir string, max int) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(max)
}

// servesAny says whether one of names is a root marker of s or a file it
// serves.
func servesAny(s config.Server, names []string) bool {
	for _, n := range names {
		if slices.Contains(s.RootMarkers, n) || serves(s, n) {
			return true
		}
	}
	return false
}

// Ask answers one of the code tools' questions: about
// a file, by the server that serves it, started if need be; about the
// workspace, by the servers found for it.
func (w *Workspace) Ask(ctx context.Context, q Query) (Answer, error) {
	cfg := w.m.cfg.Settings(w.dirs[0])
	if q.Path == "" {
		return w.askWorkspace(ctx, cfg, q)
	}
	servers, err := cfg.Servers()
	if err != nil {
		return Answer{}, err
	}
	entries := w.entriesFor(cfg, servers, q.Path)
	if len(entries) == 0 {
		return Answer{}, fmt.Errorf("no language server serves %s (see bridle doctor)", w.show(q.Path))
	}
	e := entries[0]
	sctx, cancel := context.WithTimeout(ctx, w.m.cfg.StartTimeout)
	srv, note, err := e.server(sctx)
	cancel()
	if err != nil {
		return Answer{}, w.unavailable(e, note, err)
	}
	ans := Answer{Server: srv.name(), Note: note}
	version := srv.docs.versionOf(q.Path)
	if version == 0 {
		// The server has not got the file: it is given the text the tool
		// read. One it has is left as it is (an edit through the editor
		// gave it the buffer's text).
		if version, err = srv.Sync(ctx, q.Path, q.Text); err != nil {
			return ans, srv.failure(e, err)
		}
	}
	pos := protocol.Position{Line: uint32(q.Line - 1), Character: uint32(utf16Column(q.Text, q.Line, q.Column))}
	doc := protocol.TextDocumentIdentifier{URI: protocol.DocumentURI(uri.File(q.Path))}
	at := protocol.TextDocumentPositionParams{TextDocument: doc, Position: pos}
	var raw json.RawMessage
	switch q.Op {
	case OpDefinition:
		err = srv.Request(ctx, protocol.MethodTextDocumentDefinition, at, &raw)
		ans.Items = locationItems(raw)
	case OpReferences:
		err = srv.Request(ctx, protocol.MethodTextDocumentReferences, protocol.ReferenceParams{
			TextDocumentPositionParams: at, Context: protocol.ReferenceContext{IncludeDeclaration: true}}, &raw)
		ans.Items = locationItems(raw)
		slices.SortStableFunc(ans.Items, byPlace)
	case OpHover:
		err = srv.Request(ctx, protocol.MethodTextDocumentHover, at, &raw)
		ans.Text = hoverText(raw)
	case OpSymbols:
		err = srv.Request(ctx, protocol.MethodTextDocumentDocumentSymbol, protocol.DocumentSymbolParams{TextDocument: doc}, &raw)
		ans.Items = documentSymbols(q.Path, raw)
	case OpDiagnostics:
		wctx, cancel := context.WithTimeout(ctx, cfg.LSPSection().Wait())
		f, ok, derr := srv.diagnosticsOf(wctx, q.Path, version)
		cancel()
		err = derr
		if !ok && err == nil {
			ans.Note = joinNote(ans.Note, fmt.Sprintf("%s did not give %s's diagnostics within %v%s; what it said before is shown.",
				srv.name(), w.show(q.Path), cfg.LSPSection().Wait(), loading(srv)))
			f, _ = srv.diags.get(q.Path, 0)
		}
		ans.Items = diagnosticItems(map[string]fileDiags{q.Path: f}, q.Severity)
	case OpRename:
		err = srv.Request(ctx, protocol.MethodTextDocumentRename, protocol.RenameParams{TextDocumentPositionParams: at, NewName: q.NewName}, &raw)
		if err == nil {
			ans.Edits, err = workspaceEdit(raw)
		}
	default:
		return ans, fmt.Errorf("bridle does not ask %q", q.Op)
	}
	if err != nil {
		return ans, srv.failure(e, err)
	}
	return ans, nil
}

// workspaceEdit reads a rename's WorkspaceEdit: its text edits by file
// (changes, or documentChanges' text document edits). A server that
// would create, rename or delete files, or names a URI that is not a
// file's, is refused: a rename changes the text of files, nothing more.
func workspaceEdit(raw json.RawMessage) (map[string][]TextEdit, error) {
	if string(raw) == "null" || len(raw) == 0 {
		return nil, errors.New("the server found nothing to rename there (put the position on an identifier)")
	}
	var we struct {
		Changes         map[string][]protocol.TextEdit `json:"changes"`
		DocumentChanges []struct {
			Kind         string `json:"kind"`
			TextDocument struct {
				URI string `json:"uri"`
			} `json:"textDocument"`
			Edits []protocol.TextEdit `json:"edits"`
		} `json:"documentChanges"`
	}
	if err := json.Unmarshal(raw, &we); err != nil {
		return nil, fmt.Errorf("the server's rename is not a WorkspaceEdit: %w", err)
	}
	out := map[string][]TextEdit{}
	add := func(u string, edits []protocol.TextEdit) error {
		p, ok := pathOf(u)
		if !ok {
			return fmt.Errorf("the server's rename names %q, which is not a file; nothing was changed", u)
		}
		for _, e := range edits {
			out[p] = append(out[p], TextEdit{StartLine: int(e.Range.Start.Line), StartCol16: int(e.Range.Start.Character),
				EndLine: int(e.Range.End.Line), EndCol16: int(e.Range.End.Character), NewText: e.NewText})
		}
		return nil
	}
	for _, d := range we.DocumentChanges {
		if d.Kind != "" {
			return nil, fmt.Errorf("the server's rename would %s a file; bridle applies only text edits, so nothing was changed", d.Kind)
		}
		if err := add(d.TextDocument.URI, d.Edits); err != nil {
			return nil, err
		}
	}
	if len(we.DocumentChanges) == 0 {
		for u, edits := range we.Changes {
			if err := add(u, edits); err != nil {
				return nil, err
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the server's rename changes nothing")
	}
	return out, nil
}

// askWorkspace answers a question about the whole workspace: its
// diagnostics, or a symbol query, from each server found for it.
func (w *Workspace) askWorkspace(ctx context.Context, cfg *config.Config, q Query) (Answer, error) {
	entries := w.topServers(cfg)
	if len(entries) == 0 {
		return Answer{}, errors.New("no language server is found for this workspace (see bridle doctor)")
	}
	var ans Answer
	var names []string
	wait := cfg.LSPSection().Wait()
	for _, e := range entries {
		sctx, cancel := context.WithTimeout(ctx, w.m.cfg.StartTimeout)
		srv, note, err := e.server(sctx)
		cancel()
		ans.Note = joinNote(ans.Note, note)
		if err != nil {
			ans.Note = joinNote(ans.Note, w.unavailable(e, "", err).Error())
			continue
		}
		names = append(names, srv.name())
		switch q.Op {
		case OpSymbols:
			var raw json.RawMessage
			if err := srv.Request(ctx, protocol.MethodWorkspaceSymbol, protocol.WorkspaceSymbolParams{Query: q.Query}, &raw); err != nil {
				ans.Note = joinNote(ans.Note, srv.failure(e, err).Error())
				continue
			}
			ans.Items = append(ans.Items, workspaceSymbols(raw)...)
		case OpDiagnostics:
			if !srv.settle(ctx, wait) {
				ans.Note = joinNote(ans.Note, fmt.Sprintf("%s is still loading the workspace: its diagnostics so far.", srv.name()))
			}
			ans.Items = append(ans.Items, diagnosticItems(srv.diags.snapshot(), q.Severity)...)
		default:
			return ans, fmt.Errorf("bridle does not ask %q of the whole workspace", q.Op)
		}
	}
	// The workspace's own first: a query also finds the libraries'.
	slices.SortStableFunc(ans.Items, func(a, b Item) int {
		return cmp.Compare(w.rank(a.Path), w.rank(b.Path))
	})
	ans.Server = strings.Join(names, ", ")
	if ans.Server == "" {
		ans.Server = "the language servers"
	}
	return ans, nil
}

// rank is 0 for a path in the session's directories, 1 for another.
func (w *Workspace) rank(path string) int {
	if inAny(path, w.dirs) {
		return 0
	}
	return 1
}

// settle waits, at most wait, for the server to end the work it said it
// began ($/progress): after its start, a server loads the workspace and
// publishes what it found. false: it had not ended.
func (s *Server) settle(ctx context.Context, wait time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for s.progress.Load() > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-s.Done():
			return true
		case <-t.C:
		}
	}
	return true
}

// unavailable words a server that could not answer now.
func (w *Workspace) unavailable(e *entry, note string, err error) error {
	name := filepath.Base(e.spec.program)
	switch {
	case note != "":
		return errors.New(note)
	case errors.Is(err, errStarting):
		return fmt.Errorf("%s is still starting; ask again in a moment", name)
	case errors.Is(err, errUnavailable):
		return fmt.Errorf("%s is not running now (it failed; bridle starts it again after a pause)", name)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// failure words a request that failed: a server that died on it says so,
// once.
func (s *Server) failure(e *entry, err error) error {
	if !s.alive() {
		if n := e.failedNow(s); n != "" {
			return errors.New(n)
		}
	}
	return err
}

func loading(s *Server) string {
	if s.progress.Load() > 0 {
		return " (it is still loading the workspace)"
	}
	return ""
}

func joinNote(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n" + b
}

// utf16Column is the server's column (UTF-16 units from 0) of a column
// in characters from 1 on a line (from 1) of text.
func utf16Column(text []byte, line, col int) int {
	lines := strings.SplitN(string(text), "\n", line+1)
	if line < 1 || line > len(lines) {
		return max(col-1, 0)
	}
	units, n := 0, 0
	for _, r := range lines[line-1] {
		if n == col-1 {
			break
		}
		units += max(utf16.RuneLen(r), 1)
		n++
	}
	return units + max(col-1-n, 0)
}

// locationItems reads a definition's or references' answer: a Location,
// a list of them, or of LocationLinks.
func locationItems(raw json.RawMessage) []Item {
	var out []Item
	add := func(u string, r protocol.Range) {
		if p, ok := pathOf(u); ok {
			out = append(out, Item{Path: p, Line: int(r.Start.Line) + 1, Col16: int(r.Start.Character)})
		}
	}
	var one protocol.Location
	if json.Unmarshal(raw, &one) == nil && one.URI != "" {
		add(string(one.URI), one.Range)
		return out
	}
	var list []struct {
		URI                  string         `json:"uri"`
		Range                protocol.Range `json:"range"`
		TargetURI            string         `json:"targetUri"`
		TargetSelectionRange protocol.Range `json:"targetSelectionRange"`
	}
	json.Unmarshal(raw, &list)
	for _, l := range list {
		if l.TargetURI != "" {
			add(l.TargetURI, l.TargetSelectionRange)
		} else {
			add(l.URI, l.Range)
		}
	}
	return out
}

func byPlace(a, b Item) int {
	return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col16, b.Col16))
}

// hoverText reads a hover's contents: markup, a marked string, or a list
// of them.
func hoverText(raw json.RawMessage) string {
	var h struct {
		Contents json.RawMessage `json:"contents"`
	}
	if json.Unmarshal(raw, &h) != nil || len(h.Contents) == 0 {
		return ""
	}
	var parts []json.RawMessage
	if json.Unmarshal(h.Contents, &parts) != nil {
		parts = []json.RawMessage{h.Contents}
	}
	var out []string
	for _, p := range parts {
		var s string
		if json.Unmarshal(p, &s) == nil {
			out = append(out, s)
			continue
		}
		var m struct {
			Value string `json:"value"`
		}
		if json.Unmarshal(p, &m) == nil {
			out = append(out, m.Value)
		}
	}
	return strings.Join(out, "\n")
}

// documentSymbols reads a file's outline: DocumentSymbols (nested) or
// SymbolInformation.
func documentSymbols(path string, raw json.RawMessage) []Item {
	var nested []protocol.DocumentSymbol
	if json.Unmarshal(raw, &nested) == nil && len(nested) > 0 && nested[0].Name != "" && nested[0].SelectionRange != (protocol.Range{}) || isNested(raw) {
		var out []Item
		var walk func([]protocol.DocumentSymbol, int)
		walk = func(list []protocol.DocumentSymbol, depth int) {
			for _, s := range list {
				out = append(out, Item{Path: path, Line: int(s.SelectionRange.Start.Line) + 1,
					Col16: int(s.SelectionRange.Start.Character), Label: symbolLabel(s.Kind, s.Name), Depth: depth})
				if depth < 4 {
					walk(s.Children, depth+1)
				}
			}
		}
		walk(nested, 0)
		return out
	}
	return workspaceSymbols(raw)
}

// isNested says whether a documentSymbol answer holds DocumentSymbols
// (they have a selectionRange; SymbolInformation has a location).
func isNested(raw json.RawMessage) bool {
	var probe []map[string]json.RawMessage
	json.Unmarshal(raw, &probe)
	if len(probe) == 0 {
		return false
	}
	_, ok := probe[0]["selectionRange"]
	return ok
}

// workspaceSymbols reads SymbolInformation (or WorkspaceSymbols, whose
// location may lack a range).
func workspaceSymbols(raw json.RawMessage) []Item {
	var list []struct {
		Name          string              `json:"name"`
		Kind          protocol.SymbolKind `json:"kind"`
		ContainerName string              `json:"containerName"`
		Location      struct {
			URI   string         `json:"uri"`
			Range protocol.Range `json:"range"`
		} `json:"location"`
	}
	json.Unmarshal(raw, &list)
	var out []Item
	for _, s := range list {
		p, ok := pathOf(s.Location.URI)
		if !ok {
			continue
		}
		name := s.Name
		if s.ContainerName != "" {
			name = s.ContainerName + "." + s.Name
		}
		out = append(out, Item{Path: p, Line: int(s.Location.Range.Start.Line) + 1,
			Col16: int(s.Location.Range.Start.Character), Label: symbolLabel(s.Kind, name)})
	}
	return out
}

// symbolLabel is a symbol's kind and name (its detail, a signature, is
// in the line's text the tools show).
func symbolLabel(kind protocol.SymbolKind, name string) string {
	return strings.ToLower(kind.String()) + " " + name
}

// diagnosticItems are the diagnostics of files, as severe as least or
// more, errors first.
func diagnosticItems(files map[string]fileDiags, least string) []Item {
	limit := map[string]protocol.DiagnosticSeverity{"error": 1, "warning": 2, "info": 3, "hint": 4}[least]
	if limit == 0 {
		limit = protocol.DiagnosticSeverityWarning
	}
	var problems []problem
	for p, f := range files {
		for _, d := range f.items {
			if severity(d) <= limit {
				problems = append(problems, problem{p, d})
			}
		}
	}
	slices.SortStableFunc(problems, func(a, b problem) int {
		return cmp.Or(cmp.Compare(severity(a.d), severity(b.d)), cmp.Compare(a.path, b.path),
			cmp.Compare(a.d.Range.Start.Line, b.d.Range.Start.Line), cmp.Compare(a.d.Range.Start.Character, b.d.Range.Start.Character))
	})
	out := make([]Item, 0, len(problems))
	for _, p := range problems {
		msg, _, _ := strings.Cut(strings.TrimSpace(p.d.Message), "\n")
		if len(msg) > maxMessage {
			msg = msg[:maxMessage] + "…"
		}
		out = append(out, Item{Path: p.path, Line: int(p.d.Range.Start.Line) + 1, Col16: int(p.d.Range.Start.Character),
			Label: severityWord(severity(p.d)) + " " + msg})
	}
	return out
}
