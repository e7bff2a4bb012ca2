package app

import (
	"fmt"
	"os"
	"time"

	"github.com/bridle-dev/bridle/sandbox/box"
	"github.com/bridle-dev/bridle/workspace"
)

// Doctor reports which sandbox layers this machine has and what bridle
// does without each (`bridle doctor`), and whether the file watcher can
// watch the current directory.
func Doctor() box.Report {
	bx := box.New(box.Options{})
	defer bx.Close()
	r := bx.Report()
	r.Layers = append(r.Layers, watcherLayer())
	return r
}

// watcherLayer watches the current directory as a session would and says
// whether every directory could be watched.
func watcherLayer() box.Layer {
	l := box.Layer{Name: "file watcher",
		Without: "changes on disk are found by checking modification times when an output is used; listings and searches are not cached"}
	dir, err := os.Getwd()
	if err != nil {
		l.Detail = err.Error()
		return l
	}
	w, err := workspace.Watch([]string{dir}, workspace.WatchOptions{})
	if err != nil {
		l.Detail = err.Error()
		return l
	}
	defer w.Close()
	ready := w.WaitReady(10 * time.Second)
	switch {
	case w.Degraded() != "":
		l.Detail = w.Degraded()
	case !ready:
		l.Detail = "adding the watches of " + dir + " takes more than 10 s; until they are in place, modification times are checked"
	default:
		l.OK = true
		l.Detail = fmt.Sprintf("%d directories of %s watched (limit %s)", w.Watched(), dir, watchLimit())
	}
	return l
}
