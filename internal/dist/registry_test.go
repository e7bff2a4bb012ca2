package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A release entry as Run writes it, and the archives it names.
func goodEntry(t *testing.T) ([]byte, map[string][]string) {
	t.Helper()
	c := Config{Version: "0.1.0", BaseURL: "https://github.com/bridle-dev/bridle/releases/download/v0.1.0"}
	var as []Archive
	contents := map[string][]string{}
	for _, tg := range defaultTargets {
		a := Archive{Target: tg, Name: archiveName(c.Version, tg), Files: []string{exe(tg), "LICENSE"}}
		as = append(as, a)
		contents[a.Name] = a.Files
	}
	agent, err := c.agentJSON(as)
	if err != nil {
		t.Fatal(err)
	}
	return agent, contents
}

// edit changes the entry as JSON: f gets the decoded object.
func edit(t *testing.T, agent []byte, f func(e map[string]any, bin map[string]any)) []byte {
	t.Helper()
	var e map[string]any
	if err := json.Unmarshal(agent, &e); err != nil {
		t.Fatal(err)
	}
	f(e, e["distribution"].(map[string]any)["binary"].(map[string]any))
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCheckRegistry holds each rule of the registry's CI (build_registry.py
// and the verifier's unpacking) against an entry that breaks it, so that
// a rule that stopped biting shows, and the release's own entry and icon
// against all of them.
func TestCheckRegistry(t *testing.T) {
	agent, contents := goodEntry(t)
	icon, err := os.ReadFile(filepath.Join("..", "..", "icon.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckRegistry(agent, icon, contents); err != nil {
		t.Fatalf("the release's entry and icon are refused:\n%v\n%s", err, agent)
	}

	target := func(bin map[string]any, p string) map[string]any { return bin[p].(map[string]any) }
	for _, tc := range []struct {
		name string
		edit func(e, bin map[string]any)
		want string
	}{
		{"no Windows build, as before this release covered Windows", func(e, bin map[string]any) {
			delete(bin, "windows-x86_64")
			delete(bin, "windows-aarch64")
		}, "no build for windows"},
		{"no macOS build", func(e, bin map[string]any) {
			delete(bin, "darwin-x86_64")
			delete(bin, "darwin-aarch64")
		}, "no build for darwin"},
		{"an unknown platform", func(e, bin map[string]any) { bin["windows-i686"] = target(bin, "windows-x86_64") }, `platform "windows-i686"`},
		{"an id with capitals", func(e, bin map[string]any) { e["id"] = "Bridle" }, `id "Bridle"`},
		{"an id starting with a digit", func(e, bin map[string]any) { e["id"] = "1bridle" }, `id "1bridle"`},
		{"a two-part version", func(e, bin map[string]any) { e["version"] = "0.1" }, `version "0.1"`},
		{"a version with letters", func(e, bin map[string]any) { e["version"] = "0.1.x" }, `version "0.1.x"`},
		{"an unknown distribution", func(e, bin map[string]any) {
			e["distribution"].(map[string]any)["docker"] = map[string]any{"package": "x"}
		}, `distribution "docker"`},
		{"an archive of another version", func(e, bin map[string]any) {
			target(bin, "linux-x86_64")["archive"] = "https://github.com/bridle-dev/bridle/releases/download/v0.2.0/bridle-0.1.0-linux-x86_64.tar.gz"
		}, "is version 0.2.0, the entry is 0.1.0"},
		{"a /latest/ URL", func(e, bin map[string]any) {
			target(bin, "linux-x86_64")["archive"] = "https://github.com/bridle-dev/bridle/releases/latest/download/bridle-0.1.0-linux-x86_64.tar.gz"
		}, "/latest/"},
		{"an installer", func(e, bin map[string]any) {
			target(bin, "windows-x86_64")["archive"] = "https://github.com/bridle-dev/bridle/releases/download/v0.1.0/bridle-0.1.0-windows-x86_64.msi"
		}, "installer (.msi)"},
		{"a format the verifier cannot unpack", func(e, bin map[string]any) {
			target(bin, "windows-x86_64")["archive"] = "https://github.com/bridle-dev/bridle/releases/download/v0.1.0/bridle-0.1.0-windows-x86_64.7z"
		}, "none of the archives the registry unpacks"},
		{"an archive the release did not build", func(e, bin map[string]any) {
			target(bin, "windows-x86_64")["archive"] = "https://github.com/bridle-dev/bridle/releases/download/v0.1.0/bridle-0.1.0-windows-x86_64.tar.gz"
		}, "bridle-0.1.0-windows-x86_64.tar.gz is not an archive this release built"},
		{"a cmd the archive does not hold", func(e, bin map[string]any) { target(bin, "linux-x86_64")["cmd"] = "./bridle-acp" }, "cmd ./bridle-acp is not in"},
		{"Windows' cmd without .exe", func(e, bin map[string]any) { target(bin, "windows-aarch64")["cmd"] = "./bridle" }, "must name the .exe"},
		{"no cmd", func(e, bin map[string]any) { delete(target(bin, "darwin-x86_64"), "cmd") }, "darwin-x86_64: the registry wants both archive and cmd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := edit(t, agent, tc.edit)
			err := CheckRegistry(bad, icon, contents)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckRegistry = %v, want an error saying %q\n%s", err, tc.want, bad)
			}
		})
	}
}

// TestCheckIcon holds the registry's icon rules against icons that break
// them, and icons it accepts.
func TestCheckIcon(t *testing.T) {
	const path = `<path fill="currentColor" d="M0 0h16v16z"/>`
	svg := func(attrs, body string) []byte {
		return []byte(`<svg xmlns="http://www.w3.org/2000/svg" ` + attrs + `>` + body + `</svg>`)
	}
	for _, tc := range []struct {
		name string
		icon []byte
		want string // "" when the registry accepts it
	}{
		{"16×16 by width and height", svg(`width="16" height="16"`, path), ""},
		{"16×16 by viewBox alone", svg(`viewBox="0 0 16 16"`, path), ""},
		{"width and height with units", svg(`width="16px" height="16px" viewBox="0 0 32 32"`, path), ""},
		{"stroke currentColor, fill none", svg(`viewBox="0 0 16 16" fill="none"`, `<path stroke="currentColor" d="M0 0h16"/>`), ""},
		{"style attribute currentColor", svg(`viewBox="0 0 16 16"`, `<path style="fill: currentColor; opacity: .5" d="M0 0h16"/>`), ""},
		{"24×24", svg(`width="24" height="24"`, path), "the registry wants 16×16"},
		{"not square", svg(`viewBox="0 0 16 12"`, path), "square"},
		{"no size", svg(``, path), "no width and height, and no viewBox"},
		{"a hard-coded fill", svg(`viewBox="0 0 16 16"`, path+`<circle fill="#ff0000" r="2"/>`), `fill is "#ff0000"`},
		{"a hard-coded stroke", svg(`viewBox="0 0 16 16"`, path+`<circle stroke="black" r="2"/>`), `stroke is "black"`},
		{"a hard-coded style fill", svg(`viewBox="0 0 16 16"`, path+`<circle style="fill:rgb(1,2,3)" r="2"/>`), `style fill is "rgb(1,2,3)"`},
		{"a hard-coded CSS stroke", svg(`viewBox="0 0 16 16"`, path+`<style>.a { stroke: #123456 }</style>`), `CSS stroke is "#123456"`},
		{"no currentColor", svg(`viewBox="0 0 16 16"`, `<path d="M0 0h16v16z"/>`), "no fill or stroke is currentColor"},
		{"currentColor only in the color attribute", svg(`viewBox="0 0 16 16" color="currentColor"`, `<path d="M0 0h16v16z"/>`), "no fill or stroke is currentColor"},
		{"a comment", svg(`viewBox="0 0 16 16"`, `<!-- made by hand -->`+path), "comments"},
		{"not XML", []byte(`<svg viewBox="0 0 16 16"><path fill="currentColor"></svg>`), "not valid SVG/XML"},
		{"not an SVG", []byte(`<html><body fill="currentColor"/></html>`), "the root element is <html>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkIcon(tc.icon)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused %s: %v", tc.icon, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("checkIcon(%s) = %v, want an error saying %q", tc.icon, err, tc.want)
			}
		})
	}
}
