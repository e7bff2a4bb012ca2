package main

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The package map in docs/architecture.md is drawn top-down: no package
// imports one drawn above it (but a subpackage its parent), and every
// package is on it. The tests' own tools, listed apart, import what they
// drive.
func TestNoPackageImportsUpward(t *testing.T) {
	const module = "github.com/bridle-dev/bridle"
	order, tools := mapOrder(t)
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	rel := func(p string) string {
		if p == module {
			return "main.go"
		}
		return strings.TrimPrefix(p, module+"/")
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		p := rel(f[0])
		at, drawn := order[p]
		if !drawn {
			t.Errorf("%s is not on docs/architecture.md's map", p)
			continue
		}
		if tools[p] {
			continue
		}
		for _, imp := range f[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			q := rel(imp)
			if strings.HasPrefix(p, q+"/") {
				continue
			}
			if order[q] < at {
				t.Errorf("%s imports %s, which the map draws above it", p, q)
			}
		}
	}
}

// mapOrder reads the map's packages (section 2's first code block) in
// the order drawn, and which are the tests' tools (drawn after "Tools of
// the tests").
func mapOrder(t *testing.T) (order map[string]int, tools map[string]bool) {
	t.Helper()
	f, err := os.Open("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entry := regexp.MustCompile(`^ *([a-z][a-z0-9_./]*/|main\.go) `)
	order, tools = map[string]int{}, map[string]bool{}
	section, fenced, testTools := false, false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			section = strings.HasPrefix(line, "## 2.")
		case section && strings.HasPrefix(line, "```"):
			if fenced {
				return order, tools // the map is section 2's first block
			}
			fenced = true
		case fenced && strings.HasPrefix(line, "Tools of the tests"):
			testTools = true
		case fenced:
			if m := entry.FindStringSubmatch(line); m != nil {
				name := strings.TrimSuffix(m[1], "/")
				if _, seen := order[name]; !seen {
					order[name], tools[name] = len(order), testTools
				}
			}
		}
	}
	if len(order) == 0 {
		t.Fatal("no package map found in docs/architecture.md's section 2")
	}
	return order, tools
}
