package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/tools"
)

// Restore puts files back from the checkpoints, through env (the editor's
// buffers where it holds them): each to the content its To names, or
// removed when To is empty, with the directories above it that are then
// empty and were made since since. It returns those put back and why the
// others were not. Putting a file back is the same however often it is
// done, so a rewind a crash cut short is finished by running it again.
//
// A file is written only where it still holds what the plan read (From,
// whose content was kept so the rewind can be undone) or already To:
// where it is written may have changed since the plan (a command in the
// background started or ended, and the editor's buffer, with unsaved
// text, is written instead of the disk or the other way), and what it
// holds then was never kept. Such a file is left as it is, and said why.
func (s *Store) Restore(ctx context.Context, env *tools.Env, files []event.FileRestore, since time.Time) (done []event.FileRestore, failed []string) {
	for _, f := range files {
		var err error
		if f.To == "" {
			if err = env.Root.Remove(f.Path); err == nil {
				removeMadeDirs(env, f.Path, since)
			}
		} else {
			var data []byte
			if data, err = s.Get(f.To); err == nil {
				if f.From == "" {
					err = makeAnew(env, f, data)
				} else {
					err = tools.PutFile(ctx, env, f.Path, data, f.From)
				}
			}
		}
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s (%v)", f.Path, err))
			continue
		}
		done = append(done, f)
	}
	return done, failed
}

// makeAnew makes a file the plan found missing on disk, with the mode it
// had, which the editor could not give it. One made since (not by the
// rewind: its content is not To) is left as it is.
func makeAnew(env *tools.Env, f event.FileRestore, data []byte) error {
	if _, err := env.Root.Lstat(f.Path); err != nil {
		// Missing (or refused, which the write says again).
		return env.Root.WriteFileMode(f.Path, data, fs.FileMode(f.Mode))
	}
	now, err := env.Root.ReadFile(f.Path, tools.MaxEditBytes)
	switch {
	case err != nil:
		return err
	case tools.Hash(now) != f.To:
		return errors.New("a file was made there since the rewind was planned, and it was not kept: it was not written over, so nothing is lost; rewind again to put it back")
	}
	return nil // made by this rewind before it was cut short
}

// removeMadeDirs removes, after a rewind removed the file at path, the
// directories above it that are now empty and were made since the prompt
// the rewind goes back to, up to the workspace's directory.
func removeMadeDirs(env *tools.Env, path string, since time.Time) {
	for dir := filepath.Dir(env.Root.Abs(path)); ; dir = filepath.Dir(dir) {
		if removed, err := env.Root.RemoveEmptyDir(dir, since); err != nil || !removed {
			return
		}
	}
}
