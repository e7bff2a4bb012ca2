package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/bridle-dev/bridle/sandbox/confine"
)

// A project the user lists in trusted_projects may set what decides
// where the user's keys go and what runs unasked: providers, hooks, the
// language servers' commands. Its file is the repository's, though, and
// the agent, a command or a pull can change it after the user listed the
// project. So trust is pinned to content, as direnv's allow and VS
// Code's workspace trust are: bridle records, in its own data directory
// (hidden from the file tools and the box), a digest of what the file
// sets that only trust lets it set, as the user accepted it. A file that
// differs from its record is read as a project's the user does not
// trust, and the user is told how to accept it (`bridle trust DIR`).

// ProjectTrust is what Load found of the user's trust in the project.
type ProjectTrust struct {
	// Project is the project directory, as its record names it (links
	// resolved, pinKey).
	Project string `json:"project,omitempty"`
	// Listed says the user's trusted_projects cover the project.
	Listed bool `json:"listed"`
	// Applied says its providers, hooks and language servers apply: it
	// is listed, and its file is as the user accepted it.
	Applied bool `json:"applied"`
	// Recorded says this read recorded the file as accepted: the first
	// read of a project the user listed.
	Recorded bool `json:"recorded,omitempty"`
	// Pending says there is no record yet, and the first session will
	// make one of the file as it is then; a read that records nothing
	// (bridle doctor) says so instead of recording.
	Pending bool `json:"pending,omitempty"`
	// Notices say what the user must be told: why a listed project's
	// keys are not applied and how to accept them, or that its record
	// could not be read. For the chat and bridle doctor.
	Notices []string `json:"notices,omitempty"`
}

// checkTrust decides whether the project's file (data, as read, readErr
// its error: missing or skipped files set nothing) may set what only
// trust lets it set. A project below no listed directory may not. One
// listed, or below one, may when its trusted parts are as the record of
// its directory says. With no record yet, the parts are recorded and
// apply when the directory itself is listed (the user listed it knowing
// its file) or when they are empty (nothing to accept, and a later
// change is caught); a directory below a listed one whose file sets
// something waits for the user's `bridle trust`, since the user never saw
// that file. A record that is there but cannot be read is not a first
// read: whatever made it unreadable may have changed the file too, so
// the file is read as changed and the record is left for `bridle trust`
// to replace. remedy says how the user would accept it. With
// pins.ReadOnly (bridle doctor), nothing is recorded: a first read says
// what a session would record.
func checkTrust(trusted []string, src source, data []byte, readErr error, pins Pins) (apply bool, remedy string, t ProjectTrust) {
	covered, exact := trustedBy(trusted, src.root)
	if !covered {
		return false, "", t
	}
	t.Project, t.Listed = pinKey(src.root), true
	var parts map[string]any
	if readErr == nil {
		var err error
		if parts, err = trustedParts(data); err != nil {
			// Not JSON: parseSettings says so, and nothing applies.
			return false, "", t
		}
	}
	accept := fmt.Sprintf("if you trust them, review the file and accept it as it is now with: bridle trust %s", t.Project)
	digest := digestOf(parts)
	pin, err := pins.Get(t.Project)
	recorded := err == nil
	unreadable := err != nil && !errors.Is(err, fs.ErrNotExist) && pins.Dir != ""
	switch {
	case recorded && pin.Digest == digest, (recorded || unreadable) && len(parts) == 0:
		// As accepted, or nothing that needs trust: nothing to withhold.
		if unreadable {
			t.Notices = append(t.Notices, fmt.Sprintf("the record of what you accepted of %s could not be read (%v); %s sets nothing that only a project you trust may set, "+
				"but a change setting some will not be applied until you accept the file again with: bridle trust %s", t.Project, err, src.path, t.Project))
		}
		t.Applied = true
		return true, "", t
	case unreadable:
		t.Notices = append(t.Notices, fmt.Sprintf("the record of what you accepted of %s could not be read (%v), so %s may have changed since you accepted it: it sets %s, which only a project you trust may set, "+
			"and these are not applied, as in a project you do not trust, until you review the file; %s", t.Project, err, src.path, describeKeys(parts), accept))
		return false, fmt.Sprintf("if you trust them, review the file (its record of trust could not be read) and accept it as it is now with: bridle trust %s", t.Project), t
	case recorded:
		t.Notices = append(t.Notices, fmt.Sprintf("%s changed since you accepted it (%s): it sets %s, which only a project you trust may set, and these are not applied, as in a project you do not trust, until you review the file "+
			"(the agent, a command or a pull may have changed it); %s", src.path, pin.Accepted.Local().Format(time.DateTime), describeKeys(parts), accept))
		return false, fmt.Sprintf("if you trust them, review the file (it changed since you accepted it) and accept it as it is now with: bridle trust %s", t.Project), t
	case pins.Dir == "" && len(parts) > 0:
		t.Notices = append(t.Notices, fmt.Sprintf("%s sets %s, which only a project you trust may set, and bridle has %v to pin what you trusted of it: these are not applied", src.path, describeKeys(parts), errNoPins))
		return false, "set HOME or XDG_DATA_HOME so that bridle can record what you trust, then " + accept, t
	case !exact && len(parts) > 0:
		t.Notices = append(t.Notices, fmt.Sprintf("%s sets %s, which only a project you trust may set; %s is below a directory of your \"trusted_projects\", but this file was never accepted, so these are not applied until you review it; %s",
			src.path, describeKeys(parts), t.Project, accept))
		return false, accept, t
	case pins.ReadOnly && pins.Dir != "":
		// What the first session would do, without doing it.
		t.Applied, t.Pending = true, true
		if len(parts) > 0 {
			t.Notices = append(t.Notices, fmt.Sprintf("%s has no record of trust yet: the first session here records it as accepted as it is then (it sets: %s); review it before; bridle trust --list shows the records",
				src.path, describeKeys(parts)))
		}
		return true, "", t
	case len(parts) == 0:
		// Recorded so that a file added later, or a change, is caught.
		t.Applied = true
		t.Recorded = pins.Set(t.Project, digest) == nil
		return true, "", t
	}
	if err := pins.Set(t.Project, digest); err != nil {
		t.Notices = append(t.Notices, fmt.Sprintf("%s sets %s, and bridle could not record it as trusted (%v), so these are not applied: a later change to the file could not be told from what you accepted", src.path, describeKeys(parts), err))
		return false, "make bridle's data directory writable, then " + accept, t
	}
	t.Applied, t.Recorded = true, true
	t.Notices = append(t.Notices, fmt.Sprintf("recorded %s as accepted, as it is now, whatever changed it before (it sets: %s): a later change is not applied until you accept it; review it; bridle trust --list shows it",
		src.path, describeKeys(parts)))
	return true, "", t
}

// pinKey is the name of the record of the project in root: its
// directory with symbolic links resolved, so that every path to one
// directory shares one record, as trustedBy lets every path to a listed
// directory share its trust. A directory that cannot be resolved (gone)
// is named as given.
func pinKey(root string) string {
	clean := cleanRoot(root)
	if real, err := filepath.EvalSymlinks(clean); err == nil {
		return real
	}
	return clean
}

// trustedBy says whether the project in root is one of the trusted
// directories or below one (covered), and whether it is one (exact).
// Symbolic links are followed on both sides, so a project opened through
// a link is the project it links to.
func trustedBy(trusted []string, root string) (covered, exact bool) {
	if root == "" || len(trusted) == 0 {
		return false, false
	}
	project := []string{cleanRoot(root)}
	if r, err := filepath.EvalSymlinks(project[0]); err == nil {
		project = append(project, r)
	}
	for _, dir := range trusted {
		dirs := []string{dir}
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			dirs = append(dirs, r)
		}
		for _, d := range dirs {
			for _, p := range project {
				if within(d, p) {
					covered = true
					exact = exact || p == d
				}
			}
		}
	}
	return covered, exact
}

// trustedParts is what a project's settings file sets that only the
// user's trust lets it set: its "providers" and "hooks", and what of its
// "lsp" projectLSP takes out of an untrusted project's (a server's
// command, arguments, hosts, limits). Every value the settings' merge
// applies is kept, a null (which clears the user's value) and an empty
// list (which replaces the user's) too; only empty objects are left out,
// which an untrusted project may write as well (the merge descends into
// them and sets nothing), so the parts of a file that sets none are
// empty.
func trustedParts(data []byte) (map[string]any, error) {
	parts := map[string]any{}
	if len(strings.TrimSpace(string(data))) == 0 {
		return parts, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, err
	}
	for _, k := range []string{"providers", "hooks"} {
		if raw, ok := top[k]; ok {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, err
			}
			if v, ok := prune(v); ok {
				parts[k] = v
			}
		}
	}
	if raw, ok := top["lsp"]; ok {
		var whole, kept any
		if err := json.Unmarshal(raw, &whole); err != nil {
			return nil, err
		}
		json.Unmarshal(raw, &kept)
		doc := map[string]any{"lsp": kept}
		projectLSP(doc, "", "", "")
		kept, has := doc["lsp"]
		if v, ok := subtract(whole, kept, has); ok {
			if v, ok = prune(v); ok {
				parts["lsp"] = v
			}
		}
	}
	return parts, nil
}

// subtract is what of a (a decoded JSON value) b does not hold, where b
// is a with keys taken out (hasB: b is there at all); ok is false when
// nothing is left. A null that is left is kept: it is a value.
func subtract(a, b any, hasB bool) (rest any, ok bool) {
	if !hasB {
		return a, true
	}
	am, ok := a.(map[string]any)
	bm, ok2 := b.(map[string]any)
	if !ok || !ok2 {
		if reflect.DeepEqual(a, b) {
			return nil, false
		}
		return a, true
	}
	out := map[string]any{}
	for k, v := range am {
		bv, has := bm[k]
		if d, ok := subtract(v, bv, has); ok {
			out[k] = d
		}
	}
	return out, len(out) > 0
}

// prune drops the empty objects of a decoded JSON value, which merge as
// nothing; ok is false when nothing is left. A null and an empty list
// stay: merged, they clear or replace the user's value.
func prune(v any) (pruned any, ok bool) {
	x, isMap := v.(map[string]any)
	if !isMap {
		// A list's elements keep their places (an index is what a hook's
		// position in the loop is), and are kept whole.
		return v, true
	}
	out := map[string]any{}
	for k, e := range x {
		if e, ok := prune(e); ok {
			out[k] = e
		}
	}
	return out, len(out) > 0
}

// digestOf is the digest of trusted parts: of their JSON with sorted
// keys, so spacing and key order in the file do not count.
func digestOf(parts map[string]any) string {
	if parts == nil {
		parts = map[string]any{} // a missing file sets what an empty one does
	}
	b, _ := json.Marshal(parts)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// trustedLines are the trusted parts as lines "path = value", sorted by
// path; a header's value is left out, since a gateway's header may carry
// a credential.
func trustedLines(parts map[string]any) []string {
	var out []string
	// keys are the object keys on the way: a header's value is the one
	// at providers.NAME.headers.HEADER, whatever the names say.
	var walk func(path string, keys []string, v any)
	walk = func(path string, keys []string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(path+"."+k, append(slices.Clip(keys), k), x[k])
			}
		case []any:
			if len(x) == 0 {
				// It replaces the user's list: shown as what it sets.
				out = append(out, path[1:]+" = []")
			}
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), append(slices.Clip(keys), ""), e)
			}
		default:
			if len(keys) == 4 && keys[0] == "providers" && keys[2] == "headers" {
				out = append(out, path[1:]+" = (a header's value, not shown)")
				return
			}
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false) // shown as written: "a > b", not "a \u003e b"
			enc.Encode(x)
			out = append(out, path[1:]+" = "+strings.TrimSuffix(b.String(), "\n"))
		}
	}
	walk("", nil, parts)
	return out
}

// describeKeys names the keys of trusted parts for a message: the
// sections and what they name (providers.team, hooks.PreToolUse,
// lsp.servers.go), at most 8 and how many more.
func describeKeys(parts map[string]any) string {
	var names []string
	for _, k := range slices.Sorted(maps.Keys(parts)) {
		sub, _ := parts[k].(map[string]any)
		if len(sub) == 0 {
			names = append(names, k)
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(sub)) {
			if servers, ok := sub[name].(map[string]any); ok && k == "lsp" && name == "servers" {
				for _, lang := range slices.Sorted(maps.Keys(servers)) {
					names = append(names, "lsp.servers."+lang)
				}
				continue
			}
			names = append(names, k+"."+name)
		}
	}
	if len(names) > 8 {
		names = append(names[:8], fmt.Sprintf("and %d more", len(names)-8))
	}
	return strings.Join(names, ", ")
}

// Review is what a project's settings file sets that only the user's
// trust lets it set, from one read of the file: the lines shown to the
// user and the digest recorded come from the same bytes.
type Review struct {
	// Project is the project directory, links resolved (the name of its
	// record); File its settings file, and
	// Exists whether there is one.
	Project, File string
	Exists        bool
	// Lines are the trusted keys and their values ("providers.team.base_url
	// = \"https://…\""), a header's value left out; none when the file
	// sets nothing that needs trust.
	Lines []string
	// Digest is what Pins records.
	Digest string
	// Before says, after Accept, how the record it replaced compared:
	// "none", "same", "changed" or "unreadable".
	Before string
}

// ReviewProject reads the settings file of the project in root through
// files (the file tools' confinement, as Load reads it) and returns what
// trust would let it set. A file that Load would refuse even in a
// trusted project (not JSON, a key misspelt, an api_key, malformed
// hooks), or that is not read at all (a link out of the project, a
// named pipe), is an error: it cannot be accepted.
func ReviewProject(userPath, root string, files confine.ProjectFiles) (Review, error) {
	src := source{path: ProjectPath(root), project: true, root: root, userPath: userPath, files: files, trusted: true}
	r := Review{Project: pinKey(root), File: src.path}
	data, err := readSource(src)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		r.Digest = digestOf(nil)
		return r, nil
	case err != nil:
		return Review{}, err
	}
	r.Exists = true
	if _, _, _, _, err := parseSettings(src, data); err != nil {
		return Review{}, err
	}
	parts, err := trustedParts(data)
	if err != nil {
		return Review{}, err
	}
	r.Lines, r.Digest = trustedLines(parts), digestOf(parts)
	return r, nil
}

// Accept records the settings of the project in root, as they are now,
// as what the user accepted (`bridle trust`): ReviewProject's reading,
// its digest in pins. The user's settings (userPath) must list root, or
// a directory above it, in "trusted_projects": a project is trusted by
// being listed, and the record only pins what is trusted. Review.Before
// says how it compared with the record it replaces.
func Accept(userPath, root string, files confine.ProjectFiles, pins Pins) (Review, error) {
	user, err := Load(userPath, "", files, pins)
	if err != nil {
		return Review{}, err
	}
	if covered, _ := trustedBy(user.TrustedProjects, root); !covered {
		return Review{}, fmt.Errorf("%s is not in \"trusted_projects\" of your settings file (%s), nor below a directory there: a project's providers, hooks and language servers' commands apply only in a project you list. "+
			"If you trust this repository's authors, add it there first: \"trusted_projects\": [%q]", cleanRoot(root), userSettingsOrDefault(userPath), cleanRoot(root))
	}
	r, err := ReviewProject(userPath, root, files)
	if err != nil {
		return Review{}, fmt.Errorf("%w; nothing was accepted", err)
	}
	switch pin, err := pins.Get(r.Project); {
	case errors.Is(err, fs.ErrNotExist):
		r.Before = "none"
	case err != nil:
		r.Before = "unreadable"
	case pin.Digest == r.Digest:
		r.Before = "same"
	default:
		r.Before = "changed"
	}
	if err := pins.Set(r.Project, r.Digest); err != nil {
		return Review{}, err
	}
	return r, nil
}

// PinState is a record of trust and how its project stands now.
type PinState struct {
	Pin
	// Listed says the user's trusted_projects still cover the project.
	Listed bool `json:"listed"`
	// Current says the project's settings are as accepted.
	Current bool `json:"current"`
	// Problem says why its settings could not be read.
	Problem string `json:"problem,omitempty"`
}

// PinStates lists the records of trust (Pins.List), each with how its
// project stands now: its settings read as ReviewProject reads them.
func PinStates(userPath string, files confine.ProjectFiles, pins Pins) ([]PinState, []error) {
	user, err := Load(userPath, "", files, pins)
	if err != nil {
		return nil, []error{err}
	}
	list, errs := pins.List()
	out := make([]PinState, len(list))
	for i, p := range list {
		out[i] = PinState{Pin: p}
		out[i].Listed, _ = trustedBy(user.TrustedProjects, p.Project)
		r, err := ReviewProject(userPath, p.Project, files)
		if err != nil {
			out[i].Problem = err.Error()
			continue
		}
		out[i].Current = r.Digest == p.Digest
	}
	return out, errs
}
