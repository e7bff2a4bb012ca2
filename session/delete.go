package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bridle-dev/bridle/session/checkpoint"
	"github.com/bridle-dev/bridle/store"
)

// Delete removes a session and its log for good. Nothing is stopped until
// the delete is known to be allowed: a session another live bridle
// process serves, or one of whose subagents' sessions it has open, is
// refused (ErrBusy), since its turn would go on writing to a log that is
// gone, and so is one with forks (ErrInvalid). Only then is its turn here
// cancelled, the lease kept until the rows are gone.
func (m *Manager) Delete(ctx context.Context, id string) error {
	if _, err := m.cfg.Store.Session(ctx, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: no session %q", ErrNotFound, id)
		}
		return err
	}
	if err := m.lease(ctx, id); err != nil {
		return err
	}
	ids, err := m.deleteLeased(ctx, id)
	if err != nil {
		if !m.isLive(id) {
			m.release(id)
		}
		return err
	}
	// What the sessions kept on disk goes with them: checkpoints hold
	// files' exact content, secrets included, and artifacts whole
	// outputs.
	if m.cfg.DataDir != "" {
		for _, sid := range ids.IDs {
			if err := checkpoint.Remove(m.cfg.DataDir, sid); err != nil {
				m.log.Warn("a deleted session's checkpoints remain", "session", sid, "err", err)
			}
			if err := os.RemoveAll(filepath.Join(m.cfg.DataDir, "artifacts", sid)); err != nil {
				m.log.Warn("a deleted session's artifacts remain", "session", sid, "err", err)
			}
		}
		m.removeImages(ctx, ids.Refs)
	}
	m.log.Info("session deleted", "session", id)
	return nil
}

// deleteLeased deletes a session this process holds the lease of. What
// would refuse the delete (a fork, a child session another live process
// serves) is checked before its turn here is stopped, and the store
// checks it again as it deletes.
func (m *Manager) deleteLeased(ctx context.Context, id string) (store.Deleted, error) {
	o := store.DeleteOptions{Holder: m.holder, Alive: holderAlive, Refs: &imageRefs}
	if err := m.cfg.Store.CheckDelete(ctx, id, o); err != nil {
		return store.Deleted{}, deleteErr(id, err)
	}
	m.stop(id)
	d, err := m.cfg.Store.DeleteSession(ctx, id, o)
	return d, deleteErr(id, err)
}

// deleteErr words the store's refusals of a delete for the editor.
func deleteErr(id string, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: no session %q", ErrNotFound, id)
	case errors.Is(err, store.ErrHasForks):
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return busy(err)
}

// removeImages removes the stored images named that no session's log
// refers to any more. Finding out is a scan of every prompt in the
// database that holds an image (store.Referenced). No prompt of this
// process logs an image between the scan and the removal (Manager.images);
// one of another process can (docs/architecture.md, images).
func (m *Manager) removeImages(ctx context.Context, names []string) {
	if len(names) == 0 {
		return
	}
	m.images.Lock()
	defer m.images.Unlock()
	used, err := m.cfg.Store.Referenced(ctx, imageRefs, names)
	if err != nil {
		m.log.Warn("a deleted session's images remain", "err", err)
		return
	}
	m.hook("images scanned")
	dir := filepath.Join(m.cfg.DataDir, "images")
	for _, name := range names {
		if used[name] || !checkpoint.IsDigest(name) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
			m.log.Warn("a deleted session's image remains", "image", name, "err", err)
		}
	}
}
