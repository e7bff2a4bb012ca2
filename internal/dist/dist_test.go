package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"debug/macho"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDist builds the release once, as make dist does, and checks what a
// user downloads: each archive's contents and binary format, the sums,
// the registry entry against the registry's schema, and the binary of
// this machine's platform running --version and doctor. Then it builds
// this platform again into another directory and wants the same bytes.
// One full build plus one relinked target keeps the test near a minute on
// a warm cache: the other targets go through the same build and pack. It
// runs the program as make dist does, in its own process, so that -race
// does not instrument the compression (it made the test five times
// slower).
func TestDist(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	r := dist(t, root, out)
	// The release is what out holds: the unpacked binaries are removed
	// once packed (99 MB of them stayed in dist/.build).
	if _, err := os.Stat(filepath.Join(out, ".build")); !os.IsNotExist(err) || r.Binaries != nil {
		t.Errorf("the unpacked binaries stayed: %v, Binaries %v", err, r.Binaries)
	}

	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(sums), "\n"); n != len(defaultTargets) {
		t.Errorf("SHA256SUMS has %d lines, want one per target (%d):\n%s", n, len(defaultTargets), sums)
	}

	machines := map[string]struct {
		elf   elf.Machine
		macho macho.Cpu
	}{
		"amd64": {elf.EM_X86_64, macho.CpuAmd64},
		"arm64": {elf.EM_AARCH64, macho.CpuArm64},
	}
	for _, a := range r.Archives {
		t.Run(a.Platform, func(t *testing.T) {
			files := untar(t, filepath.Join(out, a.Name))
			if !strings.Contains(string(sums), a.SHA256+"  "+a.Name+"\n") {
				t.Errorf("SHA256SUMS does not list %s with %s", a.Name, a.SHA256)
			}
			if _, ok := files["LICENSE"]; !ok {
				t.Errorf("%s has no LICENSE", a.Name)
			}
			bin, ok := files["bridle"]
			if !ok {
				t.Fatalf("%s has no bridle binary; it has %v", a.Name, keys(files))
			}
			want := machines[a.GOARCH]
			switch a.GOOS {
			case "linux":
				f, err := elf.NewFile(bytes.NewReader(bin))
				if err != nil {
					t.Fatalf("%s: bridle is not ELF: %v", a.Name, err)
				}
				if f.Machine != want.elf {
					t.Errorf("%s: ELF machine %v, want %v", a.Name, f.Machine, want.elf)
				}
				if f.Type != elf.ET_EXEC {
					t.Errorf("%s: ELF type %v, want a static executable", a.Name, f.Type)
				}
				for _, p := range f.Progs {
					if p.Type == elf.PT_INTERP {
						t.Errorf("%s: bridle asks for a dynamic loader; it must be static", a.Name)
					}
				}
			case "darwin":
				f, err := macho.NewFile(bytes.NewReader(bin))
				if err != nil {
					t.Fatalf("%s: bridle is not Mach-O: %v", a.Name, err)
				}
				if f.Cpu != want.macho || f.Type != macho.TypeExec {
					t.Errorf("%s: Mach-O %v %v, want %v executable", a.Name, f.Cpu, f.Type, want.macho)
				}
			}
		})
	}

	agent, err := os.ReadFile(filepath.Join(out, "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(filepath.Join(root, "testdata", "acp-registry", "agent.schema.json"), agent); err != nil {
		t.Errorf("agent.json against the registry's schema: %v\n%s", err, agent)
	}
	for _, a := range r.Archives {
		if !strings.Contains(string(agent), `"archive": "https://github.com/bridle-dev/bridle/releases/download/v`+r.Version+"/"+a.Name+`"`) {
			t.Errorf("agent.json does not point %s at its archive %s", a.Platform, a.Name)
		}
	}
	if icon, err := os.ReadFile(filepath.Join(out, "icon.svg")); err != nil || !bytes.Contains(icon, []byte("currentColor")) ||
		!bytes.Contains(icon, []byte(`viewBox="0 0 16 16"`)) {
		t.Errorf("icon.svg must be a 16×16 monochrome (currentColor) icon: %v\n%s", err, icon)
	}

	here := runtime.GOOS + "-" + map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	var mine *Archive
	for i := range r.Archives {
		if r.Archives[i].Platform == here {
			mine = &r.Archives[i]
		}
	}
	if mine == nil {
		t.Fatalf("the release has no archive for this machine (%s)", here)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bridle")
	if err := os.WriteFile(bin, untar(t, filepath.Join(out, mine.Name))["bridle"], 0o755); err != nil {
		t.Fatal(err)
	}
	v := run(t, dir, bin, "--version")
	for _, want := range []string{"bridle " + r.Version, "commit " + r.Commit, "built " + r.Date.Format("2006-01-02T15:04:05Z")} {
		if !strings.Contains(v, want) {
			t.Errorf("bridle --version = %q, want it to say %q", v, want)
		}
	}
	if d := run(t, dir, bin, "doctor"); !strings.Contains(d, "sandbox layers") {
		t.Errorf("bridle doctor printed no sandbox report:\n%s", d)
	}

	// Reproducible: a second build of this platform gives the same archive.
	r2 := dist(t, root, t.TempDir(), "-targets", mine.Platform)
	if r2.Archives[0].SHA256 != mine.SHA256 {
		t.Errorf("two builds of %s differ: %s then %s", mine.Name, mine.SHA256, r2.Archives[0].SHA256)
	}
}

// dist runs go run ./internal/dist from the root, as make dist does.
func dist(t *testing.T, root, out string, args ...string) Result {
	t.Helper()
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), append([]string{"run", "./internal/dist", "-json", "-out", out}, args...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	t.Log(strings.TrimSpace(stderr.String()))
	if err != nil {
		t.Fatalf("go run ./internal/dist: %v", err)
	}
	var r Result
	if err := json.Unmarshal(stdout, &r); err != nil {
		t.Fatalf("go run ./internal/dist -json printed %q: %v", stdout, err)
	}
	return r
}

func untar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("%s: gzip header names %q at %v; it must name no file and no time", path, zr.Name, zr.ModTime)
	}
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: %s is owned by %d/%d %q/%q; want root's ids and no names", path, h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = b
	}
}

func keys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

func run(t *testing.T, dir, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bridle %v: %v\n%s", args, err, out)
	}
	return string(out)
}
