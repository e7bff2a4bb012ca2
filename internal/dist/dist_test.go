package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestDist builds the release once, as make dist does, and checks what a
// user downloads: each archive's contents and binary format, the sums,
// the registry entry against the registry's schema and the rules its CI
// applies, and the binary of this machine's platform running --version
// and doctor. Then it builds this platform and Windows again into another
// directory and wants the same bytes of both kinds of archive. One full
// build plus two relinked targets keeps the test near a minute on a warm
// cache: the other targets go through the same build and pack. It runs
// the program as make dist does, in its own process, so that -race does
// not instrument the compression (it made the test five times slower).
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
	if len(r.Archives) != len(defaultTargets) {
		t.Fatalf("built %d archives, want one per target (%d)", len(r.Archives), len(defaultTargets))
	}

	machines := map[string]struct {
		elf   elf.Machine
		macho macho.Cpu
		pe    uint16
	}{
		"amd64": {elf.EM_X86_64, macho.CpuAmd64, pe.IMAGE_FILE_MACHINE_AMD64},
		"arm64": {elf.EM_AARCH64, macho.CpuArm64, pe.IMAGE_FILE_MACHINE_ARM64},
	}
	contents := map[string][]string{} // for the registry's rules
	for _, a := range r.Archives {
		t.Run(a.Platform, func(t *testing.T) {
			files, names := unpack(t, filepath.Join(out, a.Name), r.Date)
			contents[a.Name] = names
			if !strings.Contains(string(sums), a.SHA256+"  "+a.Name+"\n") {
				t.Errorf("SHA256SUMS does not list %s with %s", a.Name, a.SHA256)
			}
			if _, ok := files["LICENSE"]; !ok {
				t.Errorf("%s has no LICENSE", a.Name)
			}
			wantExt, binName := ".tar.gz", "bridle"
			if a.GOOS == "windows" {
				wantExt, binName = ".zip", "bridle.exe"
			}
			if !strings.HasSuffix(a.Name, wantExt) {
				t.Errorf("%s: a %s archive is a %s", a.Name, a.GOOS, wantExt)
			}
			bin, ok := files[binName]
			if !ok {
				t.Fatalf("%s has no %s; it has %v", a.Name, binName, names)
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
			case "windows":
				f, err := pe.NewFile(bytes.NewReader(bin))
				if err != nil {
					t.Fatalf("%s: bridle.exe is not a PE file: %v", a.Name, err)
				}
				if f.Machine != want.pe || f.Characteristics&pe.IMAGE_FILE_EXECUTABLE_IMAGE == 0 {
					t.Errorf("%s: PE machine %#x, characteristics %#x, want %#x executable", a.Name, f.Machine, f.Characteristics, want.pe)
				}
				// A console program: an editor talks to it on stdio.
				if oh, ok := f.OptionalHeader.(*pe.OptionalHeader64); !ok || oh.Subsystem != pe.IMAGE_SUBSYSTEM_WINDOWS_CUI {
					t.Errorf("%s: bridle.exe is not a 64-bit console program (%T)", a.Name, f.OptionalHeader)
				}
			default:
				t.Errorf("%s: no check for %s", a.Name, a.GOOS)
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
	var entry Agent
	if err := json.Unmarshal(agent, &entry); err != nil {
		t.Fatal(err)
	}
	if len(entry.Distribution.Binary) != len(r.Archives) {
		t.Errorf("agent.json lists %d platforms, the release has %d archives", len(entry.Distribution.Binary), len(r.Archives))
	}
	for _, a := range r.Archives {
		want := BinaryTarget{Archive: "https://github.com/bridle-dev/bridle/releases/download/v" + r.Version + "/" + a.Name,
			Cmd: "./bridle", Args: []string{"serve"}}
		if a.GOOS == "windows" {
			want.Cmd = "./bridle.exe"
		}
		if got := entry.Distribution.Binary[a.Platform]; !reflect.DeepEqual(got, want) {
			t.Errorf("agent.json's %s is %+v, want %+v", a.Platform, got, want)
		}
	}
	icon, err := os.ReadFile(filepath.Join(out, "icon.svg"))
	if err != nil {
		t.Fatal(err)
	}
	// What the registry's CI checks beyond the schema, on the archives as
	// they were read back above.
	if err := CheckRegistry(agent, icon, contents); err != nil {
		t.Errorf("the registry's CI would refuse the entry:\n%v\n%s", err, agent)
	}

	here := runtime.GOOS + "-" + map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]
	var mine, win *Archive
	for i := range r.Archives {
		switch r.Archives[i].Platform {
		case here:
			mine = &r.Archives[i]
		case "windows-x86_64":
			win = &r.Archives[i]
		}
	}
	if mine == nil || win == nil {
		t.Fatalf("the release has no archive for this machine (%s) or for windows-x86_64", here)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, exe(mine.Target))
	files, _ := unpack(t, filepath.Join(out, mine.Name), r.Date)
	if err := os.WriteFile(bin, files[exe(mine.Target)], 0o755); err != nil {
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

	// Reproducible: a second build of this platform and of Windows gives
	// the same archives, tar.gz and zip.
	r2 := dist(t, root, t.TempDir(), "-targets", mine.Platform+","+win.Platform)
	for i, a := range []*Archive{mine, win} {
		if r2.Archives[i].Name != a.Name || r2.Archives[i].SHA256 != a.SHA256 {
			t.Errorf("two builds of %s differ: %s then %s %s", a.Name, a.SHA256, r2.Archives[i].Name, r2.Archives[i].SHA256)
		}
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

// unpack reads a release archive (.tar.gz or .zip) and checks what makes
// it reproducible: fixed owners, modes and times (the commit's date), and
// a gzip header without a name or a time. It returns the files and their
// names in the archive's order.
func unpack(t *testing.T, path string, date time.Time) (map[string][]byte, []string) {
	t.Helper()
	files := map[string][]byte{}
	var names []string
	wantMode := func(name string, mode fs.FileMode) {
		want := fs.FileMode(0o644)
		if strings.HasPrefix(name, "bridle") {
			want = 0o755
		}
		if mode != want {
			t.Errorf("%s: %s has mode %v, want %v", path, name, mode, want)
		}
	}
	if strings.HasSuffix(path, ".zip") {
		zr, err := zip.OpenReader(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		defer zr.Close()
		for _, f := range zr.File {
			wantMode(f.Name, f.Mode())
			if !f.Modified.Equal(date) {
				t.Errorf("%s: %s is dated %v, want the commit's %v", path, f.Name, f.Modified, date)
			}
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatalf("%s: %s: %v", path, f.Name, err)
			}
			files[f.Name] = b
			names = append(names, f.Name)
		}
		return files, names
	}
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
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, names
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: %s is owned by %d/%d %q/%q; want root's ids and no names", path, h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		wantMode(h.Name, h.FileInfo().Mode())
		if !h.ModTime.Equal(date) {
			t.Errorf("%s: %s is dated %v, want the commit's %v", path, h.Name, h.ModTime, date)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = b
		names = append(names, h.Name)
	}
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
