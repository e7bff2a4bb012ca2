//go:build unix

package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestRepositoryPipesDoNotBlock: AGENTS.md and .gitignore as named pipes
// are skipped, never waited on (.bridle/settings.json: config's
// TestSettingsPipeDoesNotBlock).
func TestRepositoryPipesDoNotBlock(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".bridle"), 0o755)
	for _, p := range []string{"AGENTS.md", ".gitignore", ".bridle/settings.json"} {
		if err := syscall.Mkfifo(filepath.Join(dir, p), 0o644); err != nil {
			t.Fatalf("mkfifo: %v", err)
		}
	}
	done := make(chan error, 1)
	go func() {
		w, err := Open(dir, nil)
		if err != nil {
			done <- err
			return
		}
		if docs, skipped := w.Instructions(readPlain); len(docs) != 0 || len(skipped) != 1 {
			t.Errorf("a pipe read as instructions: %v (skipped: %v)", docs, skipped)
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			done <- err
			return
		}
		defer root.Close()
		Load(root, "")
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		// A hang guard, not a timing assertion.
		t.Fatal("reading a repository's pipes has not returned after a minute: it blocks")
	}
}

// TestWatcherGitignorePipes: a .gitignore that is a named pipe, placed
// before the watcher starts or renamed over a regular .gitignore again and
// again while the watcher reads it (each rename makes it read every
// .gitignore again), is refused without waiting, and Close returns.
// Before, the watcher looked at the file's type and then opened it: a pipe
// renamed over it in between blocked the open, and Close waited forever.
func TestWatcherGitignorePipes(t *testing.T) {
	for _, swap := range []bool{false, true} {
		name := "pipe in place"
		if swap {
			name = "pipe renamed over it while read"
		}
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			sub := filepath.Join(root, "sub")
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{root, sub} {
				if err := syscall.Mkfifo(filepath.Join(d, ".gitignore"), 0o644); err != nil {
					t.Fatalf("mkfifo: %v", err)
				}
			}
			done := make(chan error, 1)
			go func() {
				w, err := Watch([]string{root}, WatchOptions{})
				if err != nil {
					done <- err
					return
				}
				if !w.WaitReady(time.Minute) {
					done <- fmt.Errorf("the watcher never got ready")
					return
				}
				if swap {
					if err := swapPipes(1000, root, sub); err != nil {
						w.Close()
						done <- err
						return
					}
				}
				done <- w.Close()
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(2 * time.Minute):
				// A hang guard, not a timing assertion.
				t.Fatal("the watcher has not closed after two minutes: it waits on a named pipe")
			}
		})
	}
}

// swapPipes, n times, renames a named pipe and then a regular file over
// the .gitignore of each of dirs, and makes a new directory below the
// first with a regular .gitignore that a pipe is renamed over at once
// (then removes it).
func swapPipes(n int, dirs ...string) error {
	for i := range n {
		for _, d := range dirs {
			pipe, file := filepath.Join(d, "p.tmp"), filepath.Join(d, "f.tmp")
			if err := syscall.Mkfifo(pipe, 0o644); err != nil {
				return err
			}
			if err := os.Rename(pipe, filepath.Join(d, ".gitignore")); err != nil {
				return err
			}
			if err := os.WriteFile(file, []byte("*.log\n"), 0o644); err != nil {
				return err
			}
			if err := os.Rename(file, filepath.Join(d, ".gitignore")); err != nil {
				return err
			}
		}
		nd := filepath.Join(dirs[0], fmt.Sprintf("new%d", i))
		if err := os.Mkdir(nd, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(nd, ".gitignore"), []byte("*.tmp\n"), 0o644); err != nil {
			return err
		}
		pipe := filepath.Join(nd, "p.tmp")
		if err := syscall.Mkfifo(pipe, 0o644); err != nil {
			return err
		}
		if err := os.Rename(pipe, filepath.Join(nd, ".gitignore")); err != nil {
			return err
		}
		if err := os.RemoveAll(nd); err != nil {
			return err
		}
	}
	return nil
}
