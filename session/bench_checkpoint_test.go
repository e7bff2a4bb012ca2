package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/internal/testfs"
	"github.com/bridle-dev/bridle/sandbox/box"
	"github.com/bridle-dev/bridle/tools"
)

// BenchmarkCommandCheckpoint measures what recording a command's changes
// for a rewind costs around the command: `echo hi > cmd_out.txt` run
// with run_command in the real box through Session.recordChanges, in
// Go's source tree committed to git (testfs.GoTree) and in a generated
// 100,000-file tree (BRIDLE_BENCH_TREES=gotree,100k chooses), "first" as
// a session's first command (a new session each time), "later" as one of
// a session that has run one. Each iteration runs the command three
// ways, one after the other, 100 ms apart (the model's time between two
// commands, in which the box readies its next helper): unrecorded (the command alone), watched (the
// box tells the session's Recorder what it changes) and scanned (the
// scans around it, as sandbox.command.checkpoint "scan" and every bridle
// before the watch); ms-* are their medians, overhead-ms-* the median
// minus the unrecorded one's.
func BenchmarkCommandCheckpoint(b *testing.B) {
	trees := []struct {
		name string
		make func(testing.TB) string
	}{
		{"gotree", testfs.GoTree},
		{"100k", func(tb testing.TB) string { return testfs.GeneratedTree(tb, 100_000, true) }},
	}
	modes := []string{"unrecorded", "watched", "scanned"}
	bx := box.New(box.Options{})
	defer bx.Close()
	toolsOf := map[string][]tools.Tool{
		"watched": tools.NewTools(config.Sandbox{}, bx),
		"scanned": tools.NewTools(config.Sandbox{Command: config.CommandSettings{Checkpoint: "scan"}}, bx),
	}
	toolsOf["unrecorded"] = toolsOf["watched"]
	for _, tree := range trees {
		if only := os.Getenv("BRIDLE_BENCH_TREES"); only != "" && !strings.Contains(only, tree.name) {
			continue
		}
		ws := tree.make(b)
		for _, when := range []string{"first", "later"} {
			b.Run(tree.name+"/"+when, func(b *testing.B) {
				sessions := map[string]*Session{}
				open := func(mode string) *Session {
					if s := sessions[mode]; s != nil && when == "later" {
						return s
					}
					s := benchSession(b, nil, ws, &stopwatch{})
					s.m.cfg.Tools = toolsOf[mode]
					if mode != "unrecorded" {
						s.m.cfg.DataDir = b.TempDir()
					}
					sessions[mode] = s
					if when == "later" {
						recordedCommand(b, s) // its first
					}
					return s
				}
				times := map[string][]time.Duration{}
				for range b.N {
					for _, mode := range modes {
						s := open(mode)
						// The model's time between two commands, in which
						// the box readies the next one's helper.
						time.Sleep(pause)
						times[mode] = append(times[mode], recordedCommand(b, s))
						if when == "first" {
							s.close()
						}
					}
				}
				for _, mode := range modes {
					b.ReportMetric(ms(percentile(times[mode], 0.5)), "ms-"+mode)
					if mode != "unrecorded" {
						b.ReportMetric(ms(percentile(times[mode], 0.5)-percentile(times["unrecorded"], 0.5)), "overhead-ms-"+mode)
					}
				}
			})
		}
	}
}

// pause is the time the benchmark leaves between two commands.
const pause = 100 * time.Millisecond

// recordedCommand runs `echo hi > cmd_out.txt` as a call of s and
// returns how long it took, recorded as s records commands.
func recordedCommand(b *testing.B, s *Session) time.Duration {
	ctx := context.Background()
	tool := s.tool("run_command")
	input, _ := json.Marshal(map[string]string{"command": "echo hi > cmd_out.txt"})
	key := fmt.Sprintf("bench/%d", time.Now().UnixNano())
	env := s.callEnv(key)
	defer s.endCall(key)
	start := time.Now()
	call := tools.CallOf(tool, input)
	call.Watched = tool.(tools.WritesWatcher).WatchesWrites() == nil // as tools.Call.Run sets it
	s.recordChanges(ctx, call, env, func() string {
		res := tool.Run(ctx, env, input)
		if res.IsError {
			b.Fatalf("the command failed: %s", res.Output)
		}
		return res.Unwatched
	})
	return time.Since(start)
}
