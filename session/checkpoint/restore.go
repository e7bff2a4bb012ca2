package checkpoint

import (
	"context"
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
					// Made anew on disk, with the mode it had, which the
					// editor could not give it.
					err = env.Root.WriteFileMode(f.Path, data, fs.FileMode(f.Mode))
				} else {
					err = tools.PutFile(ctx, env, f.Path, data, true)
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
