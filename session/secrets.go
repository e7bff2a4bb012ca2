package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bridle-dev/bridle/redact"
)

// secretsWait bounds how long a prompt or a tool call waits for the list
// of the workspace's .env files: the first walk of a huge tree, just
// opened, may still run.
const secretsWait = 30 * time.Second

// knownSecretsWait bounds secretsKnown: the watcher has the list, and
// syncing it is a round trip through the watcher's events.
const knownSecretsWait = time.Second

// errSecretsPending is why a call waited for the .env files in vain.
var errSecretsPending = errors.New("bridle is still looking for the workspace's .env files, whose values it must redact from what the model is shown")

// secrets is what the session's redactor knows: bridle's secret-named
// variables, the values its MCP servers were given and the workspace's
// .env files (the space's redact.DotEnvs). A redactor is not changed once
// in use: when what it must know changes, a new one is built and takes
// its place (redactor), so a text being redacted meanwhile is redacted by
// the old one, whole.
type secrets struct {
	cur atomic.Pointer[redact.Redactor]

	mu sync.Mutex
	// mcp are the MCP servers' secret-named values: value, kind.
	mcp [][2]string
	// envs is the .env files cur knows.
	envs redact.DotEnvSet
	// told is the last bound the user was told of (DotEnvSet.Left).
	told string
}

// redactor returns the session's redactor now.
func (s *Session) redactor() *redact.Redactor { return s.sec.cur.Load() }

// rebuild builds the redactor from what it must know; s.sec.mu is held.
func (s *Session) rebuild() {
	r := redact.New(os.Environ())
	for _, v := range s.sec.mcp {
		r.AddValue(v[0], v[1])
	}
	for _, f := range s.sec.envs.Files {
		r.AddDotEnv(f.Name, f.Data)
	}
	s.sec.cur.Store(r)
	// The tool outputs cached were redacted without the new values.
	owner := s
	if s.parent != nil {
		owner = s.parent // a child uses its parent's cache
	}
	owner.mu.Lock()
	f := owner.fs
	owner.mu.Unlock()
	if f != nil {
		f.cache.Invalidate(nil)
	}
}

// addSecrets makes the redactor know values (value, kind: how its
// markers name it).
func (s *Session) addSecrets(values [][2]string) {
	if len(values) == 0 {
		return
	}
	s.sec.mu.Lock()
	defer s.sec.mu.Unlock()
	s.sec.mcp = append(s.sec.mcp, values...)
	s.rebuild()
}

// syncSecrets brings the redactor up to date with the workspace's .env
// files: a file created, changed or removed before the call counts. It
// waits for the list at most secretsWait (a workspace just opened may
// still be walked), then fails with errSecretsPending; it fails with
// ctx's error if ctx ends first.
func (s *Session) syncSecrets(ctx context.Context) error {
	wait := cmp.Or(s.m.secretsWait, secretsWait)
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	s.space.Start()
	set, err := s.space.DotEnvs().Current(wctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%w: after %v the list is not complete yet; try again in a moment", errSecretsPending, wait)
		}
		return fmt.Errorf("%w: %v", errSecretsPending, err)
	}
	s.sec.mu.Lock()
	if set.Version > s.sec.envs.Version { // a slower call may come back with an older set
		s.sec.envs = set
		s.rebuild()
	}
	tell := set.Left != "" && set.Left != s.sec.told
	s.sec.told = set.Left
	s.sec.mu.Unlock()
	if tell {
		s.notice("not every .env value of the workspace is redacted: " + set.Left)
	}
	return nil
}

// secretsKnown brings the redactor up to date, as syncSecrets does, if the
// workspace's watcher has the list of its .env files already; it waits for
// no walk. It is false when the watcher has not started, is still walking,
// cannot see every directory (the list is then a walk of the tree), or
// was slow to sync.
func (s *Session) secretsKnown(ctx context.Context) bool {
	w := s.space.Watcher()
	if w == nil || !w.Ready() || w.Degraded() != "" {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, knownSecretsWait)
	defer cancel()
	return s.syncSecrets(ctx) == nil
}
