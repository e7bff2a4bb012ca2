package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/tools"
)

// readFiles is how many files readLoop's model reads in turn.
const readFiles = 50

// readLoop is a session whose calls are real reads (read_file) of the
// workspace's files, with the built-in tools and the hidden paths bridle
// itself has (the credential stores under home, its own files): each
// call's card and result name a file, which a replay locates.
var readLoop = loop{
	name: "read",
	setup: func(tb testing.TB, cwd string) {
		for i := range readFiles {
			p := filepath.Join(cwd, "src", fmt.Sprintf("f%02d.go", i))
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				tb.Fatal(err)
			}
			body := fmt.Sprintf("package src\n\n// F%d computes part %d.\nfunc F%d() int { return %d }\n", i, i, i, i*7919%1000)
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				tb.Fatal(err)
			}
		}
	},
	rig: func(r *loopRig) {
		home, _ := os.UserHomeDir()
		r.m.cfg.Tools = tools.DefaultTools()
		r.m.cfg.Hidden = tools.HiddenPaths(config.CommandSettings{}, home, nil)
		r.m.cfg.Own = []string{r.st.Path()}
		r.model.call = func(n int) (string, string) {
			return "read_file", fmt.Sprintf(`{"path":"src/f%02d.go"}`, n%readFiles)
		}
	},
}

// counter is an editor that counts the updates it is sent, and those
// that locate a file.
type counter struct {
	recorder
	n, located atomic.Int64
}

func (c *counter) Update(_ context.Context, _ string, u acp.SessionUpdate) error {
	c.n.Add(1)
	if u.ToolCall != nil && len(u.ToolCall.Locations) > 0 || u.ToolCallUpdate != nil && len(u.ToolCallUpdate.Locations) > 0 {
		c.located.Add(1)
	}
	return nil
}

// BenchmarkReplay is what session/load costs a session of 10,000 events
// whose calls read the workspace's files (so each card and result has a
// location): the session loaded from the database through the Manager
// (reported once, ms-load), then replayed to the editor (Session.Replay:
// each event's updates made and sent, the cards previewed, their paths
// located), timed per replay.
func BenchmarkReplay(b *testing.B) {
	db, id := fixtureOf(b, readLoop, 10_000)
	r := openLoop(b, db, readLoop)
	defer r.close()
	ed := &counter{}
	r.m.cfg.Client = ed
	ctx := context.Background()
	start := time.Now()
	s, err := r.m.Get(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	load := time.Since(start)
	if n := len(s.Events()); n < 10_000 {
		b.Fatalf("the session has %d events, want 10,000", n)
	}
	for b.Loop() {
		if err := s.Replay(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if ed.n.Load() == 0 || ed.located.Load() == 0 {
		b.Fatalf("the replay sent %d updates, %d with a location: want both", ed.n.Load(), ed.located.Load())
	}
	b.ReportMetric(ms(load), "ms-load")
	b.ReportMetric(float64(len(s.Events())), "events")
}
