// Package cli is bridle's command line: one file per subcommand, each
// its flags and its output; what runs sessions is built by internal/app.
//
//	bridle                      serve ACP on stdio (what editors run)
//	bridle demo                 run a short scripted session and show it
//	bridle run PROMPT           one headless turn, the answer on stdout
//	bridle rewind SESSION N     go back to before prompt N: files and conversation
//	bridle sessions [--json]    list sessions
//	bridle log SESSION [--json] print a session's event log
//	bridle log --context SESSION  how each request filled the context window
//	bridle doctor [--json]      show which sandbox layers this machine has
//
// Global flags: --db PATH (or BRIDLE_DB), --model provider/model-id (or
// BRIDLE_MODEL), wherever they stand. Logs go to stderr at the level in
// BRIDLE_LOG.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/bridle-dev/bridle/internal/app"
)

// Build is what the root package embeds and stamps into the binary.
type Build struct {
	Version string // the VERSION file
	// Commit and Date are stamped by make dist; empty otherwise (see
	// Stamped).
	Commit, Date string
}

// globals are the flags every command takes.
type globals struct {
	db    string
	model string
	log   *slog.Logger
	build Build
}

// Main runs the command line args and returns the exit code.
func Main(ctx context.Context, b Build, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("bridle", flag.ContinueOnError)
	fl.SetOutput(stderr)
	g := globals{build: b}
	fl.StringVar(&g.db, "db", "", "SQLite database `path` (default $BRIDLE_DB, else bridle.db in the data directory: $XDG_DATA_HOME/bridle, ~/.local/share/bridle, or on Windows %LocalAppData%\\bridle)")
	fl.StringVar(&g.model, "model", "", "model as `provider/model-id` (default $BRIDLE_MODEL)")
	showVersion := fl.Bool("version", false, "print the version and exit")
	fl.Usage = func() { usage(stderr, fl) }
	cmd, global, rest := splitCommand(args)
	if err := fl.Parse(global); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, b)
		return 0
	}
	g.log = newLogger(stderr)
	if g.db == "" {
		g.db = app.DefaultDB()
	}
	if g.model == "" {
		g.model = os.Getenv("BRIDLE_MODEL")
	}
	var err error
	switch cmd {
	case "", "serve":
		if len(rest) > 0 {
			fmt.Fprintf(stderr, "bridle: unexpected argument %q; run `bridle help`\n", rest[0])
			return 2
		}
		return serve(ctx, g, stdin, stdout)
	case "demo":
		if len(rest) > 0 {
			fmt.Fprintf(stderr, "bridle: demo takes no argument, not %q; run `bridle help`\n", rest[0])
			return 2
		}
		err = demo(ctx, g, stdout)
	case "run":
		err = runOnce(ctx, g, rest, stdout, stderr)
	case "rewind":
		err = rewind(ctx, g, rest, stdout, stderr)
	case "sessions":
		err = listSessions(ctx, g, rest, stdout)
	case "log":
		err = printLog(ctx, g, rest, stdout)
	case "doctor":
		err = doctor(rest, stdout)
	case "help":
		usage(stdout, fl)
		return 0
	default:
		fmt.Fprintf(stderr, "bridle: unknown command %q; run `bridle help`\n", cmd)
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "bridle:", err)
		return 1
	}
	return 0
}

// splitCommand separates the subcommand, the global flags (wherever they
// are written) and the subcommand's own arguments.
func splitCommand(args []string) (cmd string, global, rest []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case a == "--":
			// The rest are arguments, even if they look like flags.
			return cmd, global, append(rest, args[i:]...)
		case strings.HasPrefix(a, "-") && (name == "db" || name == "model"):
			global = append(global, a)
			if !hasValue && i+1 < len(args) {
				global = append(global, args[i+1])
				i++
			}
		case strings.HasPrefix(a, "-") && (name == "version" || name == "h" || name == "help"):
			global = append(global, a)
		case cmd == "" && !strings.HasPrefix(a, "-"):
			cmd = a
		default:
			rest = append(rest, a)
		}
	}
	return cmd, global, rest
}

// parseAll parses fl's flags wherever they stand among args, as the README
// writes them (`bridle run "PROMPT" --cwd DIR`), and returns the other
// arguments in order. Everything after "--" is an argument.
func parseAll(fl *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		end := slices.Index(args, "--")
		head := args
		if end >= 0 {
			head = args[:end]
		}
		if err := fl.Parse(head); err != nil {
			return nil, err
		}
		rest := fl.Args()
		if len(rest) == 0 {
			if end >= 0 {
				pos = append(pos, args[end+1:]...)
			}
			return pos, nil
		}
		// rest[0] is an argument; the flags after it are parsed next.
		pos = append(pos, rest[0])
		consumed := len(head) - len(rest) + 1
		args = args[consumed:]
	}
}

func usage(w io.Writer, fl *flag.FlagSet) {
	fmt.Fprint(w, `bridle: a durable, sandboxed agent harness for your editor (ACP over stdio)

Usage:
  bridle [flags]                       serve ACP on stdio (editors run this)
  bridle demo                          run a short scripted session and show it
  bridle run "PROMPT" [--cwd DIR] [--mode M]
                                       one turn, headless: the answer on stdout
  bridle rewind SESSION [N|undo]       go back to before prompt N: the files the
                                       agent changed since, and the conversation;
                                       undo takes the last rewind back; alone, list
                                       the prompts with the files each changed
  bridle sessions [--json]             list sessions, newest first
  bridle log SESSION [--json]          print a session's event log
  bridle log --context SESSION [--json] how each request filled the context window
  bridle doctor [--json]               show which sandbox layers this machine has
  bridle help                          show this help

Flags:
`)
	fl.SetOutput(w)
	fl.PrintDefaults()
	fmt.Fprint(w, `
Environment:
  BRIDLE_DB     database path        BRIDLE_MODEL  provider/model-id
  ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, OPENAI_API_KEY, OPENAI_BASE_URL,
  OLLAMA_HOST   model providers; see docs/configuration.md
  BRIDLE_LOG    log level on stderr: debug, info, warn (default), error
  BRIDLE_CONTEXT  context window thresholds as JSON, e.g. {"drop":0.7,"compact":0.9,"low_water":0.5,"keep_turns":3}
`)
}

func newLogger(w io.Writer) *slog.Logger {
	level := slog.LevelWarn
	switch strings.ToLower(os.Getenv("BRIDLE_LOG")) {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "error":
		level = slog.LevelError
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// app is the stack for the commands that run sessions or read the
// database.
func (g globals) app() *app.App {
	return app.New(app.Options{DB: g.db, Model: g.model, Version: g.build.Version, Log: g.log})
}
