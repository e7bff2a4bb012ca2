package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bridle-dev/bridle/internal/fileid"
	"github.com/bridle-dev/bridle/internal/strictjson"
	"github.com/bridle-dev/bridle/redact"
	"github.com/bridle-dev/bridle/sandbox/confine"
	"github.com/bridle-dev/bridle/workspace"
)

// Config is the configuration that applies in one session directory: the
// user's settings file, then the project's over it key by key, then the
// environment. It is immutable; For returns a new one when a file it was
// read from changes.
type Config struct {
	// Cwd is the session directory it was resolved for ("" for the user's
	// settings alone).
	Cwd string
	// Settings are the merged files. Its Sandbox and TrustedProjects come
	// from the user's file only, whatever the project's says.
	Settings Settings
	// Err says the settings files are unusable (invalid JSON, a project
	// that sets providers without the user's trust, a key in a project's
	// file); Settings is then empty but for its Trust. Whatever resolves
	// models must fail with it, naming the file.
	Err error
	// Context is the "context" section, overridden key by key by
	// BRIDLE_CONTEXT; ContextErr says one of them is not an object of
	// its fields. The thresholds' order is checked by the window.
	Context    Context
	ContextErr error
	// Version numbers the resolutions of a Loader: a new number means
	// something was read anew.
	Version uint64

	environ func() []string
	files   confine.ProjectFiles
	instr   struct {
		once    sync.Once
		text    string
		skipped []string
	}
}

// Context is the "context" section: the context window's thresholds, as
// shares of the input budget (config.Context). Zero fields take the
// window's defaults.
type Context struct {
	// Drop is where old tool outputs start being replaced by addresses.
	Drop float64 `json:"drop,omitempty"`
	// Compact is where the history before the last turns is summarised.
	Compact float64 `json:"compact,omitempty"`
	// LowWater is what one batch of drops brings the window down to.
	LowWater float64 `json:"low_water,omitempty"`
	// KeepTurns is how many of the latest turns are never dropped or
	// summarised.
	KeepTurns int `json:"keep_turns,omitempty"`
	// Reserve is the response slack in tokens; 0 reserves the model's
	// MaxOutput, but at most a quarter of the window.
	Reserve int `json:"reserve,omitempty"`
}

// Validate reports a configuration that cannot work, in words a user can act on.
func (c Context) Validate() error {
	switch {
	case c.LowWater <= 0 || c.LowWater >= c.Drop:
		return fmt.Errorf("context window: the low-water mark (%.0f %%) must be above 0 and below the drop threshold (%.0f %%)", 100*c.LowWater, 100*c.Drop)
	case c.Drop >= c.Compact:
		return fmt.Errorf("context window: the drop threshold (%.0f %%) must be below the compaction threshold (%.0f %%)", 100*c.Drop, 100*c.Compact)
	case c.Compact > 1:
		return fmt.Errorf("context window: the compaction threshold (%.0f %%) must be at most 100 %%", 100*c.Compact)
	case c.KeepTurns < 1:
		return fmt.Errorf("context window: keep at least one turn (keep_turns is %d)", c.KeepTurns)
	case c.Reserve < 0:
		return fmt.Errorf("context window: the response reserve (%d) must not be negative", c.Reserve)
	}
	return nil
}

// ParseContext reads the settings' "context" object and then env (the
// value of BRIDLE_CONTEXT), each a JSON object of Context's fields; a key
// env sets overrides the settings' one. Keys are spelt exactly, as in
// the rest of the settings.
func ParseContext(settings json.RawMessage, env string) (Context, error) {
	var c Context
	for _, src := range []struct{ name, conf string }{
		{`the "context" setting`, string(settings)},
		{"BRIDLE_CONTEXT", env},
	} {
		if strings.TrimSpace(src.conf) == "" {
			continue
		}
		if err := strictjson.Unmarshal([]byte(src.conf), &c); err != nil {
			return Context{}, fmt.Errorf("%s is not a JSON object of drop, compact, low_water, keep_turns and reserve: %w", src.name, err)
		}
	}
	return c, nil
}

// Model returns what the settings' "models" section says of spec
// ("provider/model-id").
func (c *Config) Model(spec string) (ModelSpec, bool) {
	m, ok := c.Settings.Models[strings.TrimSpace(spec)]
	return m, ok
}

// Instructions are what the project and the user tell the model in this
// directory: the AGENTS.md files that apply (workspace.Instructions), then
// the "instructions" of the settings files (both apply, the user's
// first), rendered under headings naming each file, with secrets redacted
// (the environment's values, the .env files in the directory, token
// formats). They are rendered and redacted once per version of the files.
// Unusable settings contribute no instructions. The AGENTS.md files are
// read through the file tools' confinement (confine.ProjectFiles); skipped
// names those that exist but were not read, and why.
func (c *Config) Instructions() (text string, skipped []string) {
	c.instr.once.Do(func() {
		var docs []workspace.Doc
		if c.Cwd != "" {
			if w, err := workspace.Open(c.Cwd, nil); err == nil {
				var errs []error
				docs, errs = w.Instructions(c.files.Read)
				for _, err := range errs {
					c.instr.skipped = append(c.instr.skipped, err.Error())
				}
			}
		}
		docs = append(docs, c.Settings.Instructions...)
		text := workspace.Render(docs)
		if text == "" {
			return
		}
		r := redact.New(c.environ())
		if c.Cwd != "" {
			r.LoadDotEnvFiles(c.Cwd)
		}
		c.instr.text = r.Redact(text)
	})
	return c.instr.text, c.instr.skipped
}

// Loader resolves configurations and keeps the latest one of each
// directory until a file it was read from changes (size, modification
// time, inode): the settings files, the AGENTS.md files from the
// directory up to its repository's top, the directory itself and its .env
// files. An edit therefore applies from the next For without a restart,
// and an unchanged directory costs a few stats.
type Loader struct {
	// Getenv reads the environment (XDG_CONFIG_HOME, HOME,
	// BRIDLE_CONTEXT); nil is os.Getenv.
	Getenv func(string) string
	// Environ lists the environment whose values are redacted from
	// instructions; nil is os.Environ.
	Environ func() []string
	// Hidden returns the paths the session's file tools hide (for
	// confine.Root's Hide and HideOwn). The files a repository provides
	// for bridle (its settings, its AGENTS.md files) are read through
	// the same confinement, so a link to one of them is not followed; nil
	// hides nothing, and the files are confined to the project all the
	// same. It is called when a directory's files are read.
	Hidden func() (hidden, own []string)
	// Pins are the records of what the user accepted of trusted
	// projects' settings; a zero Dir is PinsDir (bridle's data
	// directory, from Getenv).
	Pins Pins

	mu      sync.Mutex
	cache   map[string]*entry
	version atomic.Uint64
}

type entry struct {
	ids     []fileID
	envs    []string // the .env files found in the directory
	resolve *Config
}

var std Loader

// For resolves the configuration for cwd with the process's environment;
// see Loader.For.
func For(cwd string) *Config { return std.For(cwd) }

// maxCached bounds the directories a Loader remembers.
const maxCached = 256

// For returns the configuration that applies in cwd (absolute; "" for
// the user's settings and the environment alone). The result is shared
// and must not be modified.
func (l *Loader) For(cwd string) *Config {
	getenv := l.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	user := UserPath(getenv)
	pins := l.Pins
	if pins.Dir == "" {
		pins.Dir = PinsDir(getenv)
	}
	l.mu.Lock()
	e := l.cache[cwd]
	l.mu.Unlock()
	var prevEnvs []string
	if e != nil {
		prevEnvs = e.envs
		if slices.Equal(e.ids, identify(user, cwd, prevEnvs, pins)) {
			return e.resolve
		}
	}
	// Identify before reading, so that a change made while reading is
	// seen by the next call.
	envs := dotEnvNames(cwd)
	ids := identify(user, cwd, envs, pins)
	c := &Config{Cwd: cwd, Version: l.version.Add(1), environ: l.Environ}
	if c.environ == nil {
		c.environ = os.Environ
	}
	if l.Hidden != nil && cwd != "" {
		c.files.Hidden, c.files.Own = l.Hidden()
	}
	c.Settings, c.Err = Load(user, cwd, c.files, pins)
	if c.Settings.Trust.Recorded {
		// The record this read made is not a change to read again: the
		// next call keeps this Config, whose notices say it was made.
		record := pins.path(c.Settings.Trust.Project)
		for i := range ids {
			if ids[i].path == record {
				ids[i] = identity(record)
			}
		}
	}
	c.Context, c.ContextErr = ParseContext(c.Settings.Context, getenv("BRIDLE_CONTEXT"))
	l.mu.Lock()
	if l.cache == nil || len(l.cache) >= maxCached {
		l.cache = map[string]*entry{}
	}
	l.cache[cwd] = &entry{ids: ids, envs: envs, resolve: c}
	l.mu.Unlock()
	return c
}

// fileID is what tells one version of a file from another.
type fileID struct {
	path  string
	ok    bool
	size  int64
	mtime int64
	ino   uint64
	dev   uint64
}

func identity(path string) fileID {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{path: path}
	}
	id := fileID{path: path, ok: true, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	fid, ok := fileid.FromInfo(fi)
	if !ok {
		fid, _ = fileid.Stat(path) // Windows: from a handle
	}
	id.dev, id.ino = fid.Dev, fid.Ino
	return id
}

// identify lists the identities of every file a Config for cwd is read
// from (the record of the project's trust too: a `bridle trust` in
// another process applies here at once), and of the directories whose
// listing decides which files those are.
func identify(user, cwd string, envs []string, pins Pins) []fileID {
	var ids []fileID
	if user != "" {
		ids = append(ids, identity(user))
	}
	if cwd == "" {
		return ids
	}
	ids = append(ids, identity(ProjectPath(cwd)), identity(cwd))
	if pins.Dir != "" {
		ids = append(ids, identity(pins.path(pinKey(cwd))))
	}
	for d := cwd; ; {
		for _, name := range workspace.InstructionFiles {
			ids = append(ids, identity(filepath.Join(d, name)))
		}
		git := identity(filepath.Join(d, ".git"))
		ids = append(ids, git)
		parent := filepath.Dir(d)
		if git.ok || parent == d {
			break
		}
		d = parent
	}
	for _, name := range envs {
		ids = append(ids, identity(filepath.Join(cwd, name)))
	}
	return ids
}

// dotEnvNames lists the .env files directly in dir, whose values are
// redacted from the instructions.
func dotEnvNames(dir string) []string {
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if redact.DotEnvName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names
}

// String names the files a configuration was read from, for logs.
func (c *Config) String() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "config %d for %q", c.Version, c.Cwd)
	if len(c.Settings.Files) > 0 {
		fmt.Fprintf(&b, " from %s", strings.Join(c.Settings.Files, ", "))
	}
	return b.String()
}
