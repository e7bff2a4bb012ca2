// Package cli is bridle's command line: one file per subcommand, each
// its flags and its output; what runs sessions is built by internal/app.
//
//	bridle                      serve ACP on stdio (what editors run)
//	bridle serve                the same, named
//	bridle demo                 run a short scripted session and show it
//	bridle run PROMPT|-         one headless turn, for scripts and CI
//	bridle rewind SESSION N     go back to before prompt N: files and conversation
//	bridle sessions [--json]    list sessions
//	bridle log SESSION [--json] print a session's event log
//	bridle log --context SESSION  how each request filled the context window
//	bridle doctor [--json]      show which sandbox layers this machine has
//	bridle trust [DIR]          accept a trusted project's settings as they are now
//
// Global flags: --db PATH (or BRIDLE_DB), --model provider/model-id (or
// BRIDLE_MODEL), wherever they stand. Each command has --help, on stdout.
// Logs go to stderr at the level in BRIDLE_LOG.
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

// Main runs the command line args and returns the exit code. Help goes
// to stdout; an error is said once, on stderr, in the command line's
// words, with a non-zero exit (2 for a mistake in the command line).
func Main(ctx context.Context, b Build, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("bridle", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	fl.Usage = func() {}
	g := globals{build: b}
	fl.StringVar(&g.db, "db", "", "SQLite database `path` (default $BRIDLE_DB, else bridle.db in the data directory: $XDG_DATA_HOME/bridle, ~/.local/share/bridle, or on Windows %LocalAppData%\\bridle)")
	fl.StringVar(&g.model, "model", "", "model as `provider/model-id` (default $BRIDLE_MODEL)")
	showVersion := fl.Bool("version", false, "print the version and exit")
	cmd, global, rest := splitCommand(args)
	if err := fl.Parse(global); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout, fl)
			return 0
		}
		return fail(stderr, exitBadInput, fmt.Errorf("%v; bridle --help lists the flags", err))
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
		return serve(ctx, g, rest, stdin, stdout, stderr)
	case "demo":
		err = demo(ctx, g, rest, stdout, stderr)
	case "run":
		return runOnce(ctx, g, rest, stdin, stdout, stderr)
	case "rewind":
		return rewind(ctx, g, rest, stdin, stdout, stderr)
	case "sessions":
		err = listSessions(ctx, g, rest, stdout, stderr)
	case "log":
		err = printLog(ctx, g, rest, stdout, stderr)
	case "doctor":
		err = doctor(rest, stdout, stderr)
	case "trust":
		err = trust(g, rest, stdout, stderr)
	case "help":
		return help(fl, rest, stdout, stderr)
	default:
		return fail(stderr, exitBadInput, fmt.Errorf("unknown command %q; bridle --help lists the commands", cmd))
	}
	if err != nil {
		var done handled
		if errors.As(err, &done) {
			return int(done)
		}
		code := exitFailed
		if errors.Is(err, app.ErrBadInput) {
			code = exitBadInput
		}
		return fail(stderr, code, err)
	}
	return 0
}

// handled is a command's exit code once it has said what went wrong
// (its help, or a flag it could not parse).
type handled int

func (h handled) Error() string { return fmt.Sprintf("exit %d", int(h)) }

// badInput is a mistake in the command line, exit code 2.
func badInput(format string, args ...any) error {
	return inputError{fmt.Errorf(format, args...)}
}

type inputError struct{ error }

func (e inputError) Unwrap() []error { return []error{app.ErrBadInput, e.error} }

// fail says err once on stderr, "bridle: " before it, and returns code.
func fail(stderr io.Writer, code int, err error) int {
	fmt.Fprintln(stderr, "bridle:", strings.TrimPrefix(err.Error(), "bridle: "))
	return code
}

// help is `bridle help [COMMAND]`.
func help(fl *flag.FlagSet, rest []string, stdout, stderr io.Writer) int {
	if len(rest) == 0 {
		usage(stdout, fl)
		return 0
	}
	if _, ok := commandHelp[rest[0]]; !ok {
		return fail(stderr, exitBadInput, fmt.Errorf("no command %q; bridle --help lists the commands", rest[0]))
	}
	// Each command prints its own help, with its flags.
	return Main(context.Background(), Build{}, []string{rest[0], "--help"}, strings.NewReader(""), stdout, stderr)
}

// commandHelp are the commands that have a help of their own.
var commandHelp = map[string]bool{"serve": true, "demo": true, "run": true, "rewind": true, "sessions": true, "log": true, "doctor": true, "trust": true}

// parseCommand parses a subcommand's flags wherever they stand among
// args (parseAll) and returns its other arguments. With -h or --help it
// prints help and the flags on stdout; a flag it cannot parse is said on
// stderr. done says the command is over, with exit code code.
func parseCommand(fl *flag.FlagSet, help string, args []string, stdout, stderr io.Writer) (words []string, code int, done bool) {
	fl.SetOutput(io.Discard)
	fl.Usage = func() {}
	words, err := parseAll(fl, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, help)
		fl.SetOutput(stdout)
		fl.PrintDefaults()
		fmt.Fprint(stdout, globalFlagsNote)
		return nil, 0, true
	}
	if err != nil {
		return nil, fail(stderr, exitBadInput, fmt.Errorf("%s: %v; bridle %s --help lists its flags", fl.Name(), err, fl.Name())), true
	}
	return words, 0, false
}

const globalFlagsNote = `
Global flags, before or after the command: --db PATH, --model provider/model-id
(bridle --help says more).
`

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
		case strings.HasPrefix(a, "-") && name == "version",
			cmd == "" && strings.HasPrefix(a, "-") && (name == "h" || name == "help"):
			// After a command, -h is the command's own help.
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
  bridle [flags]                       serve ACP on stdio (what editors run)
  bridle serve                         the same, named (what agent.json runs)
  bridle demo                          run a short scripted session and show it
  bridle run [flags] PROMPT|-          one turn, headless, for scripts and CI:
                                       the answer on stdout (--json: JSON lines)
  bridle rewind SESSION [N|undo]       go back to before prompt N: the files the
                                       agent changed since, and the conversation;
                                       undo takes the last rewind back; alone, list
                                       the prompts with the files each changed
  bridle sessions [--json]             list sessions, newest first
  bridle log SESSION [--json]          print a session's event log
  bridle log --context SESSION [--json] how each request filled the context window
  bridle doctor [--json]               show which sandbox layers this machine has
  bridle trust [DIR]                   accept a trusted project's settings as they
                                       are now (--list: those accepted)
  bridle help [COMMAND]                show this help, or a command's
                                       (bridle COMMAND --help is the same)

Exit codes: 0 done, 1 failed, 2 a mistake in the command line (said on
stderr); bridle run has more for scripts (bridle run --help).

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
