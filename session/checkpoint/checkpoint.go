// Package checkpoint keeps what files held before the agent changed them,
// so that a rewind can put them back exactly: the content before an
// edit, the changes a command made (found by scans around it), putting
// files back, the bound on what a session keeps, and its removal with the
// session. The session decides when; this package knows files, not logs.
package checkpoint

import (
	"cmp"
	"container/list"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bridle-dev/bridle/tools"
)

// Checkpoints keep a file's content before the agent changes it, once per
// session and content, in the data directory (checkpoints/SESSION/HEX, HEX
// its sha256), so that a rewind can put it back exactly. tool_started
// already names the hash before and after each edit; the content behind
// each hash is here. A session's checkpoints are bounded (Options.Bytes):
// past the bound the oldest go first, and the user is told once, since a
// rewind to before them can no longer put those files back.

// DefaultBytes bounds one session's checkpoints.
const DefaultBytes = 256 << 20

// Options say where a session's checkpoints live and how they are
// bounded.
type Options struct {
	// DataDir is bridle's data directory; "" keeps nothing, and every
	// Keep fails saying so.
	DataDir string
	// Session is the id of the session whose checkpoints these are.
	Session string
	// Bytes bounds them (0: DefaultBytes).
	Bytes int64
	// ForkOf names the session a session was forked from ("" for none):
	// Get looks there for what a fork shares with its parent.
	ForkOf func(ctx context.Context, id string) (string, error)
	// Notice tells the user something they should know once: checkpoints
	// removed past the bound, commands no longer checkpointed.
	Notice func(text string)
	Logger *slog.Logger
}

// Store is one session's checkpoints: what its directory holds, least
// recently kept first, read from the directory on first use.
type Store struct {
	o Options

	mu     sync.Mutex
	loaded bool
	files  *list.List               // of stored, least recently kept first
	index  map[string]*list.Element // by name
	total  int64
	told   bool
}

type stored struct {
	name string
	size int64
}

// New returns the checkpoints of o.Session. Nothing is read or written
// until they are used.
func New(o Options) *Store {
	if o.Bytes <= 0 {
		o.Bytes = DefaultBytes
	}
	if o.Notice == nil {
		o.Notice = func(string) {}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Store{o: o, files: list.New(), index: map[string]*list.Element{}}
}

// Dir is where session id's checkpoints live under dataDir ("" when
// dataDir is).
func Dir(dataDir, id string) string {
	if dataDir == "" {
		return ""
	}
	return filepath.Join(dataDir, "checkpoints", id)
}

// Remove removes session id's checkpoints for good (a deleted session's:
// they hold files' exact content, secrets included).
func Remove(dataDir, id string) error {
	if dataDir == "" {
		return nil
	}
	return os.RemoveAll(Dir(dataDir, id))
}

// Dir is this session's checkpoint directory.
func (s *Store) Dir() string { return Dir(s.o.DataDir, s.o.Session) }

// Bytes is the bound on what the session keeps.
func (s *Store) Bytes() int64 { return s.o.Bytes }

// Keep stores content under its hash (tools.Hash), unless it is there,
// and prunes the least recently kept checkpoints past the session's
// bound. Content already there is kept again: it becomes the most recent
// (its modification time too, which orders them when the directory is
// read again), since the record that keeps it now needs it.
func (s *Store) Keep(content []byte) (string, error) {
	hash := tools.Hash(content)
	dir := s.Dir()
	if dir == "" {
		return hash, fmt.Errorf("no data directory keeps checkpoints")
	}
	name, _ := BlobName(hash)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.load(dir)
	if e, ok := s.index[name]; ok {
		now := time.Now()
		if err := os.Chtimes(filepath.Join(dir, name), now, now); err == nil {
			s.files.MoveToBack(e)
			return hash, nil
		}
		s.remove(e) // gone from the directory: written again below
	}
	created, err := StoreBlob(dir, name, content)
	if err != nil {
		return hash, fmt.Errorf("keep a checkpoint: %w", err)
	}
	if !created {
		now := time.Now()
		os.Chtimes(filepath.Join(dir, name), now, now)
	}
	s.add(stored{name: name, size: int64(len(content))})
	pruned := 0
	for s.total > s.o.Bytes && s.files.Len() > 1 {
		old := s.files.Front()
		if err := os.Remove(filepath.Join(dir, old.Value.(stored).name)); err != nil && !os.IsNotExist(err) {
			break
		}
		s.remove(old)
		pruned++
	}
	if pruned > 0 && !s.told {
		s.told = true
		s.o.Notice(fmt.Sprintf("the oldest checkpoints were removed to keep this session's under %d MB: a rewind to before them cannot put those files back", s.o.Bytes>>20))
	}
	return hash, nil
}

// load reads what the directory holds, oldest first, once. The caller
// holds s.mu.
func (s *Store) load(dir string) {
	if s.loaded {
		return
	}
	s.loaded = true
	entries, _ := os.ReadDir(dir)
	type dated struct {
		stored
		mod int64
	}
	var all []dated
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && !strings.HasSuffix(e.Name(), ".tmp") {
			all = append(all, dated{stored{e.Name(), fi.Size()}, fi.ModTime().UnixNano()})
		}
	}
	slices.SortFunc(all, func(a, b dated) int { return cmp.Compare(a.mod, b.mod) })
	for _, d := range all {
		s.add(d.stored)
	}
}

// add puts f last, the most recently kept. The caller holds s.mu.
func (s *Store) add(f stored) {
	s.index[f.name] = s.files.PushBack(f)
	s.total += f.size
}

// remove forgets e. The caller holds s.mu.
func (s *Store) remove(e *list.Element) {
	f := s.files.Remove(e).(stored)
	delete(s.index, f.name)
	s.total -= f.size
}

// Get returns the content kept under hash: in this session's checkpoints,
// or those of the sessions it was forked from.
func (s *Store) Get(hash string) ([]byte, error) {
	name, ok := BlobName(hash)
	if !ok {
		return nil, fmt.Errorf("%q is no checkpoint", hash)
	}
	if s.o.DataDir == "" {
		return nil, fmt.Errorf("no data directory keeps checkpoints")
	}
	for id, hops := s.o.Session, 0; id != "" && hops < 64; hops++ {
		if data, err := os.ReadFile(filepath.Join(Dir(s.o.DataDir, id), name)); err == nil {
			return data, nil
		}
		if s.o.ForkOf == nil {
			break
		}
		parent, err := s.o.ForkOf(context.Background(), id)
		if err != nil {
			break
		}
		id = parent
	}
	return nil, fmt.Errorf("the checkpoint of %s is gone (checkpoints past the session's bound are removed, oldest first)", hash)
}

// Adopt keeps among this session's checkpoints the content session from
// kept under hash (a subagent's, whose changes are its parent's task
// call's), checked against the hash.
func (s *Store) Adopt(from, hash string) error {
	name, ok := BlobName(hash)
	if !ok {
		return fmt.Errorf("%q is no checkpoint", hash)
	}
	data, err := os.ReadFile(filepath.Join(Dir(s.o.DataDir, from), name))
	if err != nil {
		return err
	}
	if tools.Hash(data) != hash {
		return fmt.Errorf("the checkpoint of %s does not hold what its name says", hash)
	}
	_, err = s.Keep(data)
	return err
}

// KeepBefore keeps the content a file has before an edit changes it, as
// the edit's plan read it. A failure is logged: the edit still runs, and
// a rewind to before it will say it cannot.
func (s *Store) KeepBefore(fe tools.FileEdit) {
	if _, err := s.Keep(fe.Old); err != nil {
		s.o.Logger.Warn("no checkpoint before an edit", "session", s.o.Session, "path", fe.Path, "err", err)
	}
}
