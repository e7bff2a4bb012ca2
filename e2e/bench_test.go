package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/provider/providertest"
)

// BenchmarkSpawnToInitialize measures a start with an existing data
// directory (the database and the sandbox probe's cached report are
// there): exec of the built binary to the answer of initialize (ns/op).
func BenchmarkSpawnToInitialize(b *testing.B) {
	acptest.Binary(b)
	db := b.TempDir() + "/b.db"
	env := []string{"XDG_CACHE_HOME=" + b.TempDir()}
	// The first start creates the database and the probe's report.
	a := acptest.Start(b, acptest.Options{DB: db, Model: "scripted/demo", Env: env})
	a.Initialize()
	a.NewSession(acptest.Workspace(b, nil))
	a.CloseStdin()
	a.WaitExit()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a := acptest.Start(b, acptest.Options{DB: db, Model: "scripted/demo", Env: env})
		a.Initialize()
		b.StopTimer()
		a.CloseStdin()
		a.WaitExit()
		b.StartTimer()
	}
}

// BenchmarkSpawnToInitializeFirstStart measures a first start: a fresh
// data directory and cache, so bridle creates its database and has no
// sandbox report yet.
func BenchmarkSpawnToInitializeFirstStart(b *testing.B) {
	acptest.Binary(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		b.StartTimer()
		a := acptest.Start(b, acptest.Options{DB: dir + "/data/b.db", Model: "scripted/demo", Env: []string{"XDG_CACHE_HOME=" + dir + "/cache"}})
		a.Initialize()
		b.StopTimer()
		a.CloseStdin()
		a.WaitExit()
		b.StartTimer()
	}
}

// BenchmarkSessionNew measures session/new on a running agent.
func BenchmarkSessionNew(b *testing.B) {
	ws := acptest.Workspace(b, nil)
	a := acptest.Start(b, acptest.Options{Model: "scripted/demo"})
	a.Initialize()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a.NewSession(ws)
	}
}

// BenchmarkTenTurnSessionPeakRSS runs a 10-turn scripted session with a
// tool call in every turn and reports the process's peak resident memory
// (which counts the pages of the binary the kernel mapped in, shared with
// every other bridle) and its private (anonymous) memory at the end.
func BenchmarkTenTurnSessionPeakRSS(b *testing.B) {
	var turns []string
	for i := range 10 {
		turns = append(turns, fmt.Sprintf(`{"calls": [
			{"text": "Turn %d: reading.", "tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]},
			{"text": "Done with turn %d. %s"}]}`, i, i, strings.Repeat("word ", 200)))
	}
	scenario := `{"turns": [` + strings.Join(turns, ",") + `]}`
	ws := acptest.Workspace(b, map[string]string{"notes.txt": strings.Repeat("a line of notes\n", 500)})
	model := acptest.Scenario(b, scenario)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a := acptest.Start(b, acptest.Options{Model: model})
		a.Initialize()
		sid := a.NewSession(ws)
		for t := range 10 {
			if stop := a.Prompt(sid, fmt.Sprint("turn ", t)); stop != "end_turn" {
				b.Fatalf("turn %d: %s", t, stop)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(peakRSS(b, a.Cmd.Process.Pid))/(1<<20), "MiB-peak-rss")
		b.ReportMetric(float64(procStatus(b, a.Cmd.Process.Pid, "RssAnon"))/(1<<20), "MiB-private")
		a.CloseStdin()
		b.StartTimer()
	}
}

// BenchmarkCancelStreaming measures session/cancel → the prompt's answer
// while the model is streaming (no tool running).
func BenchmarkCancelStreaming(b *testing.B) {
	ws := acptest.Workspace(b, nil)
	a := acptest.Start(b, acptest.Options{Model: acptest.Scenario(b, slowTurn)})
	a.Initialize()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		sid := a.NewSession(ws)
		_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "count slowly"))
		a.WaitNote(func(m acptest.Msg) bool {
			return strings.Contains(string(m.Params), sid) && strings.Contains(string(m.Params), "one ")
		})
		b.StartTimer()
		a.Notify("session/cancel", map[string]string{"sessionId": sid})
		res, _ := a.Wait(answer)
		b.StopTimer()
		if !strings.Contains(string(res), "cancelled") {
			b.Fatalf("answer %s", res)
		}
		b.StartTimer()
	}
}

// BenchmarkCancelRunningCommand measures session/cancel → the prompt's
// answer while a command and a child of it run (the group is killed).
func BenchmarkCancelRunningCommand(b *testing.B) {
	const scenario = `{"turns": [{"calls": [
		{"tool_calls": [{"name": "run_command", "input": {"command": "sleep 300 & sleep 300; wait"}}]},
		{"text": "never"}
	]}]}`
	ws := acptest.Workspace(b, nil)
	a := acptest.Start(b, acptest.Options{Model: acptest.Scenario(b, scenario)})
	a.Initialize()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		sid := a.NewSession(ws)
		a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "full-auto"}, nil)
		_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "run"))
		a.WaitNote(func(m acptest.Msg) bool {
			return strings.Contains(string(m.Params), sid) && strings.Contains(string(m.Params), `"in_progress"`)
		})
		time.Sleep(20 * time.Millisecond) // let the shell start its children
		b.StartTimer()
		a.Notify("session/cancel", map[string]string{"sessionId": sid})
		res, _ := a.Wait(answer)
		b.StopTimer()
		if !strings.Contains(string(res), "cancelled") {
			b.Fatalf("answer %s", res)
		}
		b.StartTimer()
	}
}

// BenchmarkPromptToFirstByte measures, through the binary, the time from
// writing a session's first session/prompt to the provider having the
// request's headers, against a server on 127.0.0.1 replaying a recorded
// stream. Each iteration is a fresh process with a new session, as an
// editor opening a project would be: whatever the first model call
// builds (the exact tokenizer, the HTTP client) is in the figure.
func BenchmarkPromptToFirstByte(b *testing.B) {
	providers := []struct {
		name, model, stream string
		env                 func(url string) []string
	}{
		{"anthropic", "anthropic/claude-sonnet-4-5", "anthropic/text.sse", func(url string) []string {
			return []string{"ANTHROPIC_API_KEY=sk-ant-bench", "ANTHROPIC_BASE_URL=" + url}
		}},
		{"openai", "openai/gpt-4.1", "openai/text.sse", func(url string) []string {
			return []string{"OPENAI_API_KEY=sk-oai-bench", "OPENAI_BASE_URL=" + url + "/v1"}
		}},
	}
	for _, p := range providers {
		b.Run(p.name, func(b *testing.B) {
			srv := providertest.NewServer(b, providertest.Reply{Body: providertest.Load(b, acptest.Root()+"/testdata/"+p.stream)})
			home := b.TempDir()
			env := append(append([]string{"HOME=" + home, "XDG_CONFIG_HOME=" + home + "/.config", "XDG_CACHE_HOME=" + home + "/.cache"},
				noProviders()...), p.env(srv.URL)...)
			ws := acptest.Workspace(b, nil)
			db := b.TempDir() + "/b.db"
			var total time.Duration
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				a := acptest.Start(b, acptest.Options{DB: db, Model: p.model, Env: env})
				a.Initialize()
				sid := a.NewSession(ws)
				n := len(srv.Requests())
				b.StartTimer()
				sent := time.Now()
				_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "say hello"))
				res, _ := a.Wait(answer)
				b.StopTimer()
				reqs := srv.Requests()
				if len(reqs) != n+1 || !strings.Contains(string(res), "end_turn") {
					b.Fatalf("%d requests, answer %s", len(reqs)-n, res)
				}
				total += reqs[n].Arrived.Sub(sent)
				a.CloseStdin()
				a.WaitExit()
				b.StartTimer()
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-to-provider")
		})
	}
}

// BenchmarkCancelEditorFS measures session/cancel → the prompt's answer
// during an edit_file or write_file whose file is in the editor's buffers
// (ACP fs), with an editor that never answers fs calls (cancelled once it
// holds the first) and with one that takes 2 s per answer (cancelled at a
// random moment of the edit's first 8 s). ns/op is the mean latency;
// max-ms the longest.
func BenchmarkCancelEditorFS(b *testing.B) {
	const edit, write = `{"path": "app.go", "old_string": "1", "new_string": "2"}`, `{"path": "app.go", "content": "const N = 2\n"}`
	for _, tool := range []struct{ name, input string }{{"edit_file", edit}, {"write_file", write}} {
		for _, slow := range []time.Duration{0, 2 * time.Second} {
			name := tool.name + "/silent"
			if slow > 0 {
				name = fmt.Sprintf("%s/answers-in-%v", tool.name, slow)
			}
			b.Run(name, func(b *testing.B) {
				scenario := `{"turns": [{"calls": [{"tool_calls": [{"name": "` + tool.name + `", "input": ` + tool.input + `}]}, {"text": "Done."}]}]}`
				a := acptest.Start(b, acptest.Options{Model: acptest.Scenario(b, scenario)})
				a.InitializeWith(true, true)
				release := make(chan struct{})
				defer close(release)
				held := make(chan string, 64) // the session of each question held
				a.OnRequest = func(m acptest.Msg) (any, *acptest.RPCError) {
					if slow == 0 {
						var p struct{ SessionID string }
						json.Unmarshal(m.Params, &p)
						held <- p.SessionID
						<-release
						return nil, &acptest.RPCError{Code: -32800, Message: "cancelled"}
					}
					time.Sleep(slow)
					if m.Method == "fs/read_text_file" {
						return map[string]string{"content": "const N = 1 // unsaved\n"}, nil
					}
					return nil, nil
				}
				var worst time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					ws := acptest.Workspace(b, map[string]string{"app.go": "const N = 1\n"})
					sid := a.NewSession(ws)
					a.MustCall("session/set_mode", map[string]any{"sessionId": sid, "modeId": "auto-edit"}, nil)
					_, answer := a.Request("session/prompt", acptest.PromptParams(sid, "change it"))
					if slow == 0 {
						for s := range held {
							if s == sid {
								break
							}
						}
					} else {
						time.Sleep(time.Duration(rand.Int64N(int64(8 * time.Second))))
					}
					start := time.Now()
					b.StartTimer()
					a.Notify("session/cancel", map[string]string{"sessionId": sid})
					m := <-answer // no time bound: before the fix this took up to 30 s
					b.StopTimer()
					worst = max(worst, time.Since(start))
					if !strings.Contains(string(m.Result), "cancelled") {
						b.Fatalf("answer %s %+v", m.Result, m.Error)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(worst.Milliseconds()), "max-ms")
			})
		}
	}
}
