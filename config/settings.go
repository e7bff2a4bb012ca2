package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/bridle-dev/bridle/internal/strictjson"
	"github.com/bridle-dev/bridle/sandbox/confine"
	"github.com/bridle-dev/bridle/workspace"
)

// Settings is the merged content of the user's and the project's
// settings.json. The environment overrides both; that is applied where
// each value is used (provider resolution reads ANTHROPIC_API_KEY and
// friends itself), not here.
type Settings struct {
	// Model is the default model, written provider/model-id.
	Model string `json:"model,omitempty"`
	// Providers configures model providers by name: the built-in ones
	// (anthropic, openai, ollama, vllm, llamacpp, lmstudio) or new names
	// for other OpenAI- or Anthropic-compatible servers. A project's file
	// may set none of it unless the user trusts the project (see
	// TrustedProjects): it would decide where the user's keys are sent.
	Providers map[string]ProviderSettings `json:"providers,omitempty"`
	// Models declares or corrects what the catalogue knows of a model,
	// keyed by provider/model-id.
	Models map[string]ModelSpec `json:"models,omitempty"`

	// TrustedProjects are the project directories (absolute, cleaned, "~/"
	// expanded) whose settings may configure providers; a listed
	// directory covers the directories below it. Only the user's file may
	// set it: a project cannot vouch for itself.
	TrustedProjects []string `json:"trusted_projects,omitempty"`

	// Sandbox is the "sandbox" object (ParseSandbox reads it). Only
	// the user's file may set it: a project's file is the repository
	// author's, and must not loosen the box the user runs it in.
	Sandbox json.RawMessage `json:"sandbox,omitempty"`

	// LSP is the "lsp" object (ParseLSP reads it, Config.Servers
	// resolves it): the language servers. A project's file may only turn
	// them off and pass initialization options, unless the user trusts
	// the project (projectLSP).
	LSP json.RawMessage `json:"lsp,omitempty"`
	// LSPRefused names the languages whose server a project's settings
	// tried to choose without the user's trust, with why: those servers
	// do not run there.
	LSPRefused map[string]string `json:"-"`

	// Context is the "context" object: the context window's thresholds
	// ({"drop":0.7,"compact":0.9,...}, config.Context reads it).
	Context json.RawMessage `json:"context,omitempty"`

	// Instructions are the "instructions" of each file that has some (a
	// string, or a list of strings), the user's first. They are not
	// merged like the other keys: both apply, and the project's reach the
	// model next to its AGENTS.md.
	Instructions []workspace.Doc `json:"-"`

	// Hooks are the user's hooks, then those of a project the user
	// trusts (trusted_projects); like Instructions, both apply. A
	// project's hooks are commands its author wrote: without the trust
	// they are ignored, with a warning.
	Hooks []Hook `json:"-"`

	// Trust is what was found of the user's trust in the project: listed
	// or not, its trusted keys applied or not (pinned to what the user
	// accepted: Pins), and what the user must be told of it.
	Trust ProjectTrust `json:"-"`

	// Files lists the settings files that were read, user's first.
	Files []string `json:"-"`
	// Warnings name keys that no part of bridle reads (a misspelling,
	// or a setting of a newer version).
	Warnings []string `json:"-"`
}

// ProviderSettings configures one provider.
type ProviderSettings struct {
	// API is the wire protocol, "anthropic" or "openai"; built-in
	// providers know theirs, a new name must say.
	API string `json:"api,omitempty"`
	// BaseURL replaces the provider's default address.
	BaseURL string `json:"base_url,omitempty"`
	// APIKeyEnv names the environment variable that holds the key.
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// APIKey is the key itself. Allowed in the user's file only: a
	// project's file is usually committed.
	APIKey string `json:"api_key,omitempty"`
	// Headers are sent with every request (gateways often want one).
	Headers map[string]string `json:"headers,omitempty"`
}

// ModelSpec is what bridle must know of a model to budget its window:
// the one description of a model's size, used by the catalogue
// (provider.Model), the settings' "models" section, a scripted scenario's
// "model" and the context window (config.ModelSpec). In the settings it
// describes a model the catalogue does not know, or corrects it (a local
// server running a smaller window, say); zero fields say nothing.
type ModelSpec struct {
	// Window is the context window in tokens, input and output together.
	Window int `json:"window,omitempty"`
	// MaxOutput is the most tokens one response may hold.
	MaxOutput int `json:"max_output,omitempty"`
	// Tokenizer is the model's token encoding family ("o200k_base"); an
	// unknown one is estimated and corrected from reported usage.
	Tokenizer string `json:"tokenizer,omitempty"`
	// Images says the model takes images in prompts; a prompt with an
	// image is refused for a model that does not.
	Images bool `json:"images,omitempty"`
}

// UserPath is where the user's settings live: settings.json in ConfigDir
// ($XDG_CONFIG_HOME/bridle, or ~/.config/bridle; %AppData%\bridle on
// Windows). It returns "" when the environment names no such place.
func UserPath(getenv func(string) string) string {
	if dir := ConfigDir(getenv); dir != "" {
		return filepath.Join(dir, "settings.json")
	}
	return ""
}

// ProjectPath is where a project's settings live.
func ProjectPath(root string) string {
	return filepath.Join(root, ".bridle", "settings.json")
}

// Load reads the user's settings (userPath, "" for none) and then
// the project's (under projectRoot, "" for none); a missing file is not an
// error. The project's values override the user's, key by key. With an
// error, only the Settings' Trust is set.
//
// A project's file comes with the repository, so its author, not the
// user, wrote it: it may choose the "model" and correct "models",
// "context" and "instructions", but a "providers" section in it is an
// error naming the file and the keys, since a base_url or api_key_env
// there would send the user's keys wherever the repository says. The
// user lifts that for the projects listed in their "trusted_projects",
// whose providers override the user's key by key (a trusted project that
// sets providers.openai.base_url keeps the user's api_key_env for the
// same provider). An api_key is refused in every project file.
//
// Trust is in the file's content, not only its place (pins, see
// checkTrust): what trust lets a project set (its providers, hooks and
// language servers' commands) applies only as the user accepted it, so
// an edit by the agent, a command or a pull does not inherit the trust.
//
// The project's file is read through project (the file tools'
// confinement): a link leading out of the project, or to a hidden path,
// is not followed, and the file is skipped with a warning.
func Load(userPath, projectRoot string, project confine.ProjectFiles, pins Pins) (Settings, error) {
	merged := map[string]any{}
	var files []string
	var instructions []workspace.Doc
	var hooks []Hook
	var trusted []string
	var trust ProjectTrust
	unknownKeys := map[string][]string{}
	var skipped []string
	var refused map[string]string
	for _, f := range []source{
		{path: userPath},
		{path: projectSettingsOrEmpty(projectRoot), project: true, root: projectRoot, userPath: userPath, files: project},
	} {
		if f.path == "" {
			continue
		}
		data, err := readSource(f)
		if f.project {
			f.trusted, f.remedy, trust = checkTrust(trusted, f, data, err, pins)
		}
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		var skip *skippedError
		if errors.As(err, &skip) {
			skipped = append(skipped, skip.Error())
			continue
		}
		if err != nil {
			return Settings{Trust: trust}, err
		}
		doc, unknown, text, fileHooks, err := parseSettings(f, data)
		if err != nil {
			// The trust's notices still say why a trusted project's
			// providers were refused.
			return Settings{Trust: trust}, err
		}
		if !f.project {
			trusted, _ = doc["trusted_projects"].([]string)
		}
		if f.project && !f.trusted {
			var warn []string
			refused, warn = projectLSP(doc, f.path, f.remedyOrList(), f.userPath)
			unknown = append(unknown, warn...)
		}
		files = append(files, f.path)
		unknownKeys[f.path] = unknown
		if text != "" {
			instructions = append(instructions, workspace.Doc{Path: f.path, Text: text})
		}
		hooks = append(hooks, fileHooks...)
		mergeInto(merged, doc)
	}
	var s Settings
	var warnings []string
	for _, f := range files {
		warnings = append(warnings, unknownKeys[f]...)
	}
	warnings = append(warnings, skipped...)
	if len(merged) > 0 {
		b, _ := json.Marshal(merged)
		if err := strictjson.Unmarshal(b, &s); err != nil {
			// Each file was checked alone; the merge cannot make a type wrong.
			return Settings{}, fmt.Errorf("settings (%s): %w", strings.Join(files, ", "), err)
		}
	}
	s.Files, s.Warnings, s.Instructions, s.LSPRefused, s.Hooks, s.Trust = files, warnings, instructions, refused, hooks, trust
	return s, nil
}

// source is one settings file and what it may set.
type source struct {
	path string
	// project: the file is a project's, written by the repository's
	// author; root is the project's directory.
	project bool
	root    string
	// trusted: the user's settings list the project in trusted_projects
	// and its file is as the user accepted it (checkTrust), so its
	// providers, hooks and language servers count.
	trusted bool
	// remedy says how the user would let the project set what it may
	// set only when trusted: list it, or accept its file as it is now.
	remedy string
	// userPath is the user's settings file, for messages.
	userPath string
	// files reads a project's file (the user's is read as it is).
	files confine.ProjectFiles
}

// skippedError is a project's settings file that exists but that is not
// read (a link leading out of the project or to a hidden path, a file
// with other hard links, a named pipe): it is left out with a warning, as
// if it were not there, so that the session works with the user's
// settings.
type skippedError struct{ err error }

func (e *skippedError) Error() string {
	return fmt.Sprintf("%v; the project's settings are ignored until it is a regular file inside the project", e.err)
}

// remedyOrList is what the user would do to let the project set what
// only trust lets it set.
func (src source) remedyOrList() string {
	if src.remedy != "" {
		return src.remedy
	}
	return listRemedy(src.userPath, src.root)
}

// listRemedy tells the user to list the project in trusted_projects.
func listRemedy(userPath, root string) string {
	return fmt.Sprintf("if you trust this repository's authors, add the project to \"trusted_projects\" in your own settings file (%s): \"trusted_projects\": [%q]", userSettingsOrDefault(userPath), cleanRoot(root))
}

func projectSettingsOrEmpty(root string) string {
	if root == "" {
		return ""
	}
	return ProjectPath(root)
}

// readSource reads one settings file: a project's through its
// confinement, with an error that is not fs.ErrNotExist made a
// skippedError (the session goes on without it).
func readSource(src source) ([]byte, error) {
	if !src.project {
		data, err := workspace.ReadRegular(src.path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read settings: %w", err)
		}
		return data, err
	}
	data, err := src.files.Read(src.root, filepath.Join(".bridle", "settings.json"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, &skippedError{fmt.Errorf("settings file %s not read: %w", src.path, err)}
	}
	return data, err
}

// parseSettings reads one file's content and returns it as a generic
// document for merging, with the top-level keys bridle does not know.
// Keys are spelt exactly: one that is a known key in another case
// ("Providers", or "provider\u017f" by Unicode folding) is an error naming
// it as written, at any level, since encoding/json would take it for the
// key. Inside the sections this file defines, unknown keys are errors
// naming the file, so a misspelt "base_ulr" is reported rather than
// ignored; other unknown top-level keys are only warnings, and dropped.
// The file's "instructions" come back apart, as text. A project's file
// loses what only the user may set (see Load), with an error for
// providers and a warning for the rest.
func parseSettings(src source, data []byte) (doc map[string]any, unknown []string, instructions string, hooks []Hook, err error) {
	path, project := src.path, src.project
	if len(bytes.TrimSpace(data)) == 0 {
		return map[string]any{}, nil, "", nil, nil
	}
	invalid := func(err error) error {
		return fmt.Errorf("settings file %s is not valid: %w (see docs/configuration.md)", path, err)
	}
	// The keys are checked as written before anything is decoded:
	// encoding/json would take "Providers" or "provider\u017f" for
	// "providers" while the checks below look for the exact key.
	keys, err := strictjson.Check(data, reflect.TypeFor[file]())
	if err != nil {
		return nil, nil, "", nil, invalid(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, nil, "", nil, invalid(err)
	}
	var wrong []string
	for _, k := range keys {
		if k.Path == "" && k.Field == "" {
			unknown = append(unknown, fmt.Sprintf("%s: unknown setting %q is ignored", path, k.Name))
			delete(top, k.Name)
			continue
		}
		wrong = append(wrong, k.Error())
	}
	if len(wrong) > 0 {
		return nil, nil, "", nil, invalid(errors.New(strings.Join(wrong, "; ")))
	}
	slices.Sort(unknown)
	var s file
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, nil, "", nil, invalid(err)
	}
	if s.Instructions != nil {
		if instructions, err = instructionText(s.Instructions); err != nil {
			return nil, nil, "", nil, invalid(err)
		}
	}
	var trusted []string
	if _, ok := top["trusted_projects"]; ok && !project {
		if trusted, err = trustedDirs(s.TrustedProjects); err != nil {
			return nil, nil, "", nil, invalid(err)
		}
	}
	if project {
		for _, name := range slices.Sorted(maps.Keys(s.Providers)) {
			if s.Providers[name].APIKey != "" {
				return nil, nil, "", nil, fmt.Errorf("settings file %s sets providers.%s.api_key: a project's settings are usually committed, so keys do not belong there; put the key in the environment and name its variable with api_key_env in your own settings file (%s), or in this file if you list the project in \"trusted_projects\" there", path, name, userSettingsOrDefault(src.userPath))
			}
		}
		if !src.trusted {
			if keys := providerKeys(top["providers"]); len(keys) > 0 {
				return nil, nil, "", nil, fmt.Errorf("settings file %s sets %s: a project's settings come with the repository, so bridle does not let them decide where requests go or which keys they carry, "+
					"and sends no request from this project until this is resolved. A project's settings may choose a \"model\" among the providers you configured. "+
					"Move these keys to your own settings file (%s), or %s",
					path, strings.Join(keys, ", "), userSettingsOrDefault(src.userPath), src.remedyOrList())
			}
		}
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, nil, "", nil, invalid(err)
	}
	for k := range doc {
		if _, known := top[k]; !known {
			delete(doc, k) // an unknown setting, reported above
		}
	}
	delete(doc, "instructions")
	delete(doc, "hooks")
	switch {
	case s.Hooks == nil:
	case project && !src.trusted:
		// Not even read: they cannot run, and a repository's mistake in
		// them must not stop the session.
		unknown = append(unknown, fmt.Sprintf("%s: \"hooks\" are ignored: a project's hooks are commands its author wrote, and run only in a project you trust: %s", path, src.remedyOrList()))
	default:
		whose := "user"
		if project {
			whose = "project"
		}
		if hooks, err = parseHooks(s.Hooks, path, whose); err != nil {
			return nil, nil, "", nil, invalid(err)
		}
	}
	if project {
		if _, ok := doc["sandbox"]; ok {
			delete(doc, "sandbox")
			unknown = append(unknown, fmt.Sprintf("%s: \"sandbox\" is ignored: only your own settings file (%s) may change the sandbox", path, userSettingsOrDefault(src.userPath)))
		}
		if _, ok := doc["trusted_projects"]; ok {
			delete(doc, "trusted_projects")
			unknown = append(unknown, fmt.Sprintf("%s: \"trusted_projects\" is ignored: a project cannot trust itself; only your own settings file (%s) may list trusted projects", path, userSettingsOrDefault(src.userPath)))
		}
		if !src.trusted {
			// Only empty entries are left, which set nothing.
			delete(doc, "providers")
		}
	} else if trusted != nil {
		doc["trusted_projects"] = trusted
	}
	return doc, unknown, instructions, hooks, nil
}

// providerKeys lists the keys a "providers" section sets, as
// providers.NAME.KEY, sorted. The section was checked to be an object of
// objects already.
func providerKeys(raw json.RawMessage) []string {
	var section map[string]map[string]json.RawMessage
	json.Unmarshal(raw, &section)
	var keys []string
	for name, p := range section {
		for k := range p {
			keys = append(keys, "providers."+name+"."+k)
		}
	}
	slices.Sort(keys)
	return keys
}

// trustedDirs checks and cleans the user's trusted_projects: absolute
// paths, or ones starting with "~/" (the home directory).
func trustedDirs(list []string) ([]string, error) {
	out := []string{}
	for _, d := range list {
		orig := d
		d = strings.TrimSpace(d)
		if d == "~" || len(d) >= 2 && d[0] == '~' && os.IsPathSeparator(d[1]) { // "~\" too on Windows
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, fmt.Errorf("in \"trusted_projects\": %q: %w", orig, err)
			}
			d = filepath.Join(home, d[1:])
		}
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("in \"trusted_projects\": %q is not an absolute path (or one starting with ~/)", orig)
		}
		out = append(out, filepath.Clean(d))
	}
	return out, nil
}

// within says whether path is dir or below it; both are clean and
// absolute.
func within(dir, path string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// cleanRoot is a project directory as the user would list it.
func cleanRoot(root string) string {
	if abs, err := filepath.Abs(root); err == nil {
		return abs
	}
	return filepath.Clean(root)
}

func userSettingsOrDefault(path string) string {
	if path == "" {
		return "~/.config/bridle/settings.json"
	}
	return path
}

// instructionText reads "instructions": one string, or a list of strings
// that become one line each.
func instructionText(raw json.RawMessage) (string, error) {
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return strings.TrimSpace(one), nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", errors.New(`"instructions" must be a string or a list of strings`)
	}
	var b strings.Builder
	for _, l := range list {
		if l = strings.TrimSpace(l); l != "" {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// file is the shape of one settings file: the settings, and the
// "instructions" that are kept apart instead of merged.
type file struct {
	Settings
	Instructions json.RawMessage `json:"instructions,omitempty"`
	Hooks        json.RawMessage `json:"hooks,omitempty"`
}

// mergeInto copies src over dst, descending into objects so that only the
// keys src names are replaced.
func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		if sv, ok := v.(map[string]any); ok {
			if dv, ok := dst[k].(map[string]any); ok {
				mergeInto(dv, sv)
				continue
			}
		}
		dst[k] = v
	}
}
