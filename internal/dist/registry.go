package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The ACP registry's CI (agentclientprotocol/registry,
// .github/workflows/build_registry.py and verify_agents.py) applies rules
// beyond its JSON schema before it lists an entry. CheckRegistry applies
// them here, so that make dist fails instead of the registry's pull
// request. Where two revisions of the registry differ, the stricter rule
// is kept: revision 8a5aa15 refuses an entry that leaves an operating
// system out, later ones warn.

var (
	registryPlatforms = []string{"darwin-aarch64", "darwin-x86_64", "linux-aarch64", "linux-x86_64",
		"windows-aarch64", "windows-x86_64"}
	registryOSes = []string{"darwin", "linux", "windows"}
	// Installers the registry refuses, and the archives its verifier
	// unpacks (by the URL's ending).
	refusedArchives  = []string{".dmg", ".pkg", ".deb", ".rpm", ".msi", ".appimage"}
	unpackedArchives = []string{".zip", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2"}
	// The version the registry reads from a release URL, to compare with
	// the entry's.
	urlVersion = regexp.MustCompile(`/(?:download|releases)/v?([\d.]+)/`)
	// Fills and strokes a themed icon may use.
	iconPaints = []string{"currentcolor", "none", "inherit"}
	cssPaint   = regexp.MustCompile(`(?i)\b(fill|stroke)\s*:\s*([^;}\s]+)`)
)

// registryIconSize is the icon's width and height the registry wants.
const registryIconSize = 16

// CheckRegistry reports what the registry's CI would refuse in the entry
// agent (already valid against the schema), its icon, and the archives
// it names: contents maps each archive's file name (the URL's last
// segment) to the names of the files it holds. It returns nil when the
// registry would list the entry.
func CheckRegistry(agent, icon []byte, contents map[string][]string) error {
	var e struct {
		ID           string `json:"id"`
		Version      string `json:"version"`
		Distribution map[string]json.RawMessage
	}
	if err := json.Unmarshal(agent, &e); err != nil {
		return fmt.Errorf("agent.json: %w", err)
	}
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if e.ID == "" || !isLower(e.ID[0]) || strings.Trim(e.ID, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		fail("id %q: the registry wants a lowercase letter first, then lowercase letters, digits and hyphens", e.ID)
	}
	if parts := strings.Split(e.Version, "."); len(parts) < 3 || !digits(parts[0]) || !digits(parts[1]) || !digits(parts[2]) {
		fail("version %q: the registry wants a semantic version, three numbers first (1.0.0)", e.Version)
	}
	for kind := range e.Distribution {
		if kind != "binary" && kind != "npx" && kind != "uvx" {
			fail("distribution %q: the registry knows binary, npx and uvx only", kind)
		}
	}
	var binary map[string]struct {
		Archive string `json:"archive"`
		Cmd     string `json:"cmd"`
	}
	if raw, ok := e.Distribution["binary"]; !ok {
		fail("distribution.binary is missing: the release is a binary per platform")
	} else if err := json.Unmarshal(raw, &binary); err != nil {
		fail("distribution.binary: %v", err)
	}
	oses := map[string]bool{}
	for _, p := range slices.Sorted(maps.Keys(binary)) {
		t := binary[p]
		if !slices.Contains(registryPlatforms, p) {
			fail("platform %q: the registry knows %s", p, strings.Join(registryPlatforms, ", "))
			continue
		}
		oses[strings.SplitN(p, "-", 2)[0]] = true
		if t.Archive == "" || t.Cmd == "" {
			fail("%s: the registry wants both archive and cmd", p)
			continue
		}
		lower := strings.ToLower(t.Archive)
		if i := slices.IndexFunc(refusedArchives, func(ext string) bool { return strings.HasSuffix(lower, ext) }); i >= 0 {
			fail("%s: %s is an installer (%s), which the registry refuses", p, t.Archive, refusedArchives[i])
		} else if !slices.ContainsFunc(unpackedArchives, func(ext string) bool { return strings.HasSuffix(lower, ext) }) {
			fail("%s: %s is none of the archives the registry unpacks (%s)", p, t.Archive, strings.Join(unpackedArchives, ", "))
		}
		if strings.Contains(t.Archive, "/latest/") {
			fail("%s: %s points at /latest/; the registry wants the version in the URL", p, t.Archive)
		} else if m := urlVersion.FindStringSubmatch(t.Archive); m != nil && semver3(m[1]) != e.Version {
			fail("%s: %s is version %s, the entry is %s", p, t.Archive, semver3(m[1]), e.Version)
		}
		// The verifier unpacks the archive and runs the file named by cmd
		// (without its "./"), found anywhere in it.
		name := path.Base(t.Archive)
		files, ok := contents[name]
		if !ok {
			fail("%s: %s is not an archive this release built (%s)", p, name, strings.Join(slices.Sorted(maps.Keys(contents)), ", "))
			continue
		}
		cmd := strings.TrimPrefix(t.Cmd, "./")
		if !slices.ContainsFunc(files, func(f string) bool { return f == cmd || strings.HasSuffix(f, "/"+cmd) }) {
			fail("%s: cmd %s is not in %s, which holds %s", p, t.Cmd, name, strings.Join(files, ", "))
		}
		if strings.HasPrefix(p, "windows-") && !strings.HasSuffix(strings.ToLower(cmd), ".exe") {
			fail("%s: cmd %s must name the .exe for Windows to run it", p, t.Cmd)
		}
	}
	for _, os := range registryOSes {
		if !oses[os] {
			fail("distribution.binary has no build for %s: the registry wants every operating system (%s)", os, strings.Join(registryOSes, ", "))
		}
	}
	if err := checkIcon(icon); err != nil {
		errs = append(errs, fmt.Errorf("icon.svg: %w", err))
	}
	return errors.Join(errs...)
}

// checkIcon applies the registry's icon rules: an SVG without comments,
// square and 16×16 by its width and height (or else its viewBox), every
// fill and stroke (attributes, style attributes, <style> rules) themed
// (currentColor, none or inherit), and currentColor used at least once.
func checkIcon(icon []byte) error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if bytes.Contains(icon, []byte("<!--")) {
		fail("it has comments, which break the registry's docs (MDX); remove them")
	}
	d := xml.NewDecoder(bytes.NewReader(icon))
	root := true
	themed := false
	paint := func(where, v string) {
		switch lv := strings.ToLower(strings.TrimSpace(v)); {
		case lv == "currentcolor":
			themed = true
		case !slices.Contains(iconPaints, lv):
			fail("%s is %q: use currentColor or none, so that the icon follows the editor's theme", where, v)
		}
	}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			fail("not valid SVG/XML: %v", err)
			return errors.Join(errs...)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if root {
				root = false
				if el.Name.Local != "svg" {
					fail("the root element is <%s>, not <svg>", el.Name.Local)
					return errors.Join(errs...)
				}
				checkIconSize(el, fail)
			}
			for _, a := range el.Attr {
				switch a.Name.Local {
				case "fill", "stroke":
					paint(a.Name.Local, a.Value)
				case "style":
					for _, decl := range strings.Split(a.Value, ";") {
						name, v, ok := strings.Cut(decl, ":")
						if n := strings.ToLower(strings.TrimSpace(name)); ok && (n == "fill" || n == "stroke") {
							paint("style "+n, v)
						}
					}
				}
			}
			if el.Name.Local == "style" {
				var css string
				if err := d.DecodeElement(&css, &el); err != nil {
					fail("<style>: %v", err)
				}
				for _, m := range cssPaint.FindAllStringSubmatch(css, -1) {
					paint("CSS "+strings.ToLower(m[1]), m[2])
				}
			}
		}
	}
	if root {
		fail("it has no <svg> element")
	} else if !themed {
		fail("no fill or stroke is currentColor: the registry wants the icon to follow the editor's theme")
	}
	return errors.Join(errs...)
}

// checkIconSize reads the size as the registry does: width and height
// (units dropped) when both parse, else the viewBox's last two numbers.
func checkIconSize(svg xml.StartElement, fail func(string, ...any)) {
	attr := func(name string) string {
		for _, a := range svg.Attr {
			if a.Name.Local == name {
				return a.Value
			}
		}
		return ""
	}
	number := func(s string) (float64, bool) {
		s = strings.TrimRightFunc(strings.TrimSpace(s), func(r rune) bool { return r == '%' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' })
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	}
	w, okW := number(attr("width"))
	h, okH := number(attr("height"))
	if !okW || !okH {
		okW, okH = false, false
		if vb := strings.Fields(attr("viewBox")); len(vb) == 4 {
			w, okW = number(vb[2])
			h, okH = number(vb[3])
		}
	}
	if !okW || !okH {
		fail("no width and height, and no viewBox: the registry wants a %d×%d icon", registryIconSize, registryIconSize)
		return
	}
	if w != h {
		fail("it is %g×%g: the registry wants a square icon", w, h)
	}
	if w != registryIconSize || h != registryIconSize {
		fail("it is %g×%g: the registry wants %d×%d", w, h, registryIconSize, registryIconSize)
	}
}

// semver3 is a version as the registry normalizes one read from a URL:
// three dot-separated parts, padded with zeros or cut.
func semver3(v string) string {
	parts := strings.Split(v, ".")
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	return strings.Join(parts[:3], ".")
}

func digits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

func isLower(b byte) bool { return b >= 'a' && b <= 'z' }
