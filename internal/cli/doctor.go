package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/bridle-dev/bridle/sandbox/box"
	"github.com/bridle-dev/bridle/workspace"
)

// doctor prints which sandbox layers this machine has and what bridle does
// without each, and whether the file watcher can watch the current
// directory.
func doctor(args []string, w io.Writer) error {
	asJSON := false
	for _, a := range args {
		switch a {
		case "--json", "-json":
			asJSON = true
		default:
			return fmt.Errorf("doctor: unknown argument %q (it takes only --json)", a)
		}
	}
	bx := box.New(box.Options{})
	defer bx.Close()
	r := bx.Report()
	r.Layers = append(r.Layers, watcherLayer())
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintln(w, "bridle sandbox layers on this machine (and the file watcher, on this directory):")
	fmt.Fprint(w, r.String())
	if missing := r.MissingLayers(); len(missing) > 0 {
		fmt.Fprintf(w, "\n%d layer(s) missing: commands still run, with the fallbacks above; each command's result names them too.\n", len(missing))
	}
	if why := r.Unconfined(); why != "" {
		fmt.Fprintf(w, "Commands are not kept in here (%s): full-auto asks before the first command of each session.\n", why)
	}
	return nil
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
		l.Detail = fmt.Sprintf("%d directories of %s watched (limit %s)", w.Watched(), dir, inotifyLimit())
	}
	return l
}

// inotifyLimit reads the OS limit on watches, where there is one to read.
func inotifyLimit() string {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches")
	if err != nil {
		return "set by the OS"
	}
	return "fs.inotify.max_user_watches = " + strings.TrimSpace(string(b))
}
