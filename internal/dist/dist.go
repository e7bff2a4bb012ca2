// Command dist builds bridle's release: a static binary for each platform,
// packed reproducibly (.tar.gz, .zip for Windows), their SHA256SUMS, and
// the ACP registry entry (agent.json, checked against the registry's
// schema and the rules its CI applies) with the icon. make dist runs it
// from the repository root:
//
//	go run ./internal/dist [-out dist] [-base-url URL]
//
// Two runs on the same commit give byte-identical archives: the binaries
// are built with -trimpath and without cgo, stamped with the commit and
// its date (not the clock), and the archives carry fixed modes, owners,
// order and times, with a gzip header that names no file and no time.
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Target is one platform of the release, named as the ACP registry names
// it.
type Target struct {
	Platform     string // registry name: linux-x86_64, ...
	GOOS, GOARCH string
}

// defaultTargets are the platforms a release ships: every operating
// system the ACP registry knows, since its CI refuses an entry that leaves
// one out.
var defaultTargets = []Target{
	{"linux-x86_64", "linux", "amd64"},
	{"linux-aarch64", "linux", "arm64"},
	{"darwin-x86_64", "darwin", "amd64"},
	{"darwin-aarch64", "darwin", "arm64"},
	{"windows-x86_64", "windows", "amd64"},
	{"windows-aarch64", "windows", "arm64"},
}

// Config is one release build.
type Config struct {
	Root    string // the repository root
	Out     string // where the archives, SHA256SUMS, agent.json and icon.svg go
	BaseURL string // where the archives will be downloaded from; default the GitHub release of the version
	Targets []Target
	// Version, Commit and Date default to the VERSION file, git's HEAD
	// and HEAD's commit time (or $SOURCE_DATE_EPOCH).
	Version, Commit string
	Date            time.Time
	Log             io.Writer
	// KeepBinaries leaves the unpacked binaries in Out/.build for the
	// caller (Result.Binaries: the VS Code packages take them); without
	// it they are removed once packed, and Out holds only the release.
	KeepBinaries bool
}

// Archive is one packed platform.
type Archive struct {
	Target
	Name   string   // file name in Out
	Files  []string // what it holds
	SHA256 string
}

// Result is what a release build made.
type Result struct {
	Version, Commit string
	Date            time.Time
	Archives        []Archive
	// Binaries are the unpacked binaries by platform, in Out/.build,
	// when Config.KeepBinaries asked for them.
	Binaries map[string]string
}

func main() {
	var c Config
	flag.StringVar(&c.Out, "out", "dist", "output `directory`")
	flag.StringVar(&c.BaseURL, "base-url", "", "`URL` the archives are published under (default: the GitHub release of VERSION)")
	only := flag.String("targets", "", "comma-separated `platforms` to build (default: all)")
	asJSON := flag.Bool("json", false, "print what was built as JSON on stdout")
	flag.BoolVar(&c.KeepBinaries, "keep-binaries", false, "leave the unpacked binaries in `out`/.build (see -json's Binaries)")
	flag.Parse()
	for _, p := range strings.Split(*only, ",") {
		i := slices.IndexFunc(defaultTargets, func(t Target) bool { return t.Platform == p })
		if i < 0 && p != "" {
			fmt.Fprintf(os.Stderr, "dist: unknown platform %q\n", p)
			os.Exit(2)
		}
		if i >= 0 {
			c.Targets = append(c.Targets, defaultTargets[i])
		}
	}
	c.Root = "."
	c.Log = os.Stderr
	start := time.Now()
	r, err := Run(context.Background(), c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(1)
	}
	if *asJSON {
		json.NewEncoder(os.Stdout).Encode(r)
	}
	fmt.Fprintf(os.Stderr, "dist: bridle %s (%s) for %d platforms in %s, in %s\n", r.Version, r.Commit, len(r.Archives),
		c.Out, time.Since(start).Round(time.Second))
}

// Run builds, packs, sums and describes the release.
func Run(ctx context.Context, c Config) (r Result, err error) {
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Targets == nil {
		c.Targets = defaultTargets
	}
	if err := c.defaults(ctx); err != nil {
		return Result{}, err
	}
	if c.BaseURL == "" {
		c.BaseURL = "https://github.com/bridle-dev/bridle/releases/download/v" + c.Version
	}
	r = Result{Version: c.Version, Commit: c.Commit, Date: c.Date, Binaries: map[string]string{}}
	if err := os.MkdirAll(c.Out, 0o755); err != nil {
		return r, fmt.Errorf("output directory: %w", err)
	}
	if !c.KeepBinaries {
		defer func() {
			os.RemoveAll(filepath.Join(c.Out, ".build"))
			r.Binaries = nil
		}()
	}
	license, err := os.ReadFile(filepath.Join(c.Root, "LICENSE"))
	if err != nil {
		return r, fmt.Errorf("the archives carry the LICENSE: %w", err)
	}
	// One go build per target, all at once: the compiler is the cost, and
	// the build cache shares what the targets have in common.
	var wg sync.WaitGroup
	errs := make([]error, len(c.Targets))
	r.Archives = make([]Archive, len(c.Targets))
	for i, t := range c.Targets {
		bin := filepath.Join(c.Out, ".build", t.Platform, exe(t))
		r.Binaries[t.Platform] = bin
		wg.Go(func() {
			if err := c.build(ctx, t, bin); err != nil {
				errs[i] = err
				return
			}
			r.Archives[i], errs[i] = c.pack(t, bin, license)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return r, err
	}
	if err := c.writeSums(r.Archives); err != nil {
		return r, err
	}
	agent, err := c.agentJSON(r.Archives)
	if err != nil {
		return r, err
	}
	if err := Validate(filepath.Join(c.Root, "testdata", "acp-registry", "agent.schema.json"), agent); err != nil {
		return r, fmt.Errorf("agent.json does not match the registry's schema: %w", err)
	}
	icon, err := os.ReadFile(filepath.Join(c.Root, "icon.svg"))
	if err != nil {
		return r, fmt.Errorf("the registry entry needs the icon: %w", err)
	}
	contents := map[string][]string{}
	for _, a := range r.Archives {
		contents[a.Name] = a.Files
	}
	// A build of some platforms (-targets) is for testing, and its entry
	// lacks the others, which the registry refuses: only a whole release
	// is held to the registry's rules.
	whole := !slices.ContainsFunc(defaultTargets, func(t Target) bool { return !slices.Contains(c.Targets, t) })
	if whole {
		if err := CheckRegistry(agent, icon, contents); err != nil {
			return r, fmt.Errorf("the ACP registry's CI would refuse agent.json:\n%w", err)
		}
	} else {
		fmt.Fprintf(c.Log, "dist: agent.json lists %d of the %d platforms: not an entry for the ACP registry\n", len(c.Targets), len(defaultTargets))
	}
	if err := os.WriteFile(filepath.Join(c.Out, "agent.json"), agent, 0o644); err != nil {
		return r, err
	}
	return r, os.WriteFile(filepath.Join(c.Out, "icon.svg"), icon, 0o644)
}

func exe(t Target) string {
	if t.GOOS == "windows" {
		return "bridle.exe"
	}
	return "bridle"
}

// defaults fills the version from VERSION and the commit and its date
// from git, so that the stamp depends on the source, not on the clock.
func (c *Config) defaults(ctx context.Context) error {
	if c.Version == "" {
		v, err := os.ReadFile(filepath.Join(c.Root, "VERSION"))
		if err != nil {
			return fmt.Errorf("the version is the VERSION file: %w", err)
		}
		c.Version = strings.TrimSpace(string(v))
	}
	if c.Commit == "" {
		out, err := c.git(ctx, "rev-parse", "HEAD")
		if err != nil {
			return fmt.Errorf("the commit to stamp (git rev-parse HEAD): %w", err)
		}
		c.Commit = out
		if st, err := c.git(ctx, "status", "--porcelain", "--untracked-files=no"); err == nil && st != "" {
			c.Commit += "-dirty"
		}
	}
	if c.Date.IsZero() {
		s := os.Getenv("SOURCE_DATE_EPOCH")
		if s == "" {
			out, err := c.git(ctx, "log", "-1", "--format=%ct")
			if err != nil {
				return fmt.Errorf("the date to stamp (git log): %w", err)
			}
			s = out
		}
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("the date to stamp: %q is not seconds since 1970: %w", s, err)
		}
		c.Date = time.Unix(sec, 0).UTC()
	}
	return nil
}

func (c *Config) git(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", c.Root}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// build compiles one target: static, without local paths, stamped.
func (c *Config) build(ctx context.Context, t Target, out string) error {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	ldflags := fmt.Sprintf("-s -w -buildid= -X main.commit=%s -X main.date=%s", c.Commit, c.Date.Format(time.RFC3339))
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", abs, ".")
	cmd.Dir = c.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+t.GOOS, "GOARCH="+t.GOARCH, "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s: %w\n%s", t.Platform, err, stderr.String())
	}
	fmt.Fprintf(c.Log, "dist: built %s in %s\n", t.Platform, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// pack writes bridle-VERSION-PLATFORM.tar.gz (.zip for Windows, whose
// users and tools unpack zips): the binary and the licence, in a fixed
// order, with fixed modes and the commit's date.
func (c *Config) pack(t Target, bin string, license []byte) (Archive, error) {
	a := Archive{Target: t, Name: archiveName(c.Version, t)}
	body, err := os.ReadFile(bin)
	if err != nil {
		return a, err
	}
	files := []packed{{exe(t), 0o755, body}, {"LICENSE", 0o644, license}}
	for _, f := range files {
		a.Files = append(a.Files, f.name)
	}
	var b []byte
	if t.GOOS == "windows" {
		b, err = zipFiles(files, c.Date)
	} else {
		b, err = tarGzipFiles(files, c.Date)
	}
	if err != nil {
		return a, fmt.Errorf("packing %s: %w", a.Name, err)
	}
	sum := sha256.Sum256(b)
	a.SHA256 = hex.EncodeToString(sum[:])
	return a, os.WriteFile(filepath.Join(c.Out, a.Name), b, 0o644)
}

// archiveName is the file a platform's release is packed in.
func archiveName(version string, t Target) string {
	ext := ".tar.gz"
	if t.GOOS == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("bridle-%s-%s%s", version, t.Platform, ext)
}

// packed is one file of an archive.
type packed struct {
	name string
	mode fs.FileMode
	body []byte
}

// tarGzipFiles packs files as a ustar archive with root's ids and no
// names, under a gzip header without a file name or a time.
func tarGzipFiles(files []packed, date time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, f := range files {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: int64(f.mode), Size: int64(len(f.body)),
			ModTime: date, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// zipFiles packs files as a zip: deflated, each stamped with date (in
// UTC, so that the MS-DOS time does not follow the builder's zone) and
// its Unix mode, which unzip and Python's zipfile restore elsewhere than
// on Windows.
func zipFiles(files []packed, date time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: date.UTC()}
		h.SetMode(f.mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeSums writes SHA256SUMS in sha256sum's format, so that
// `sha256sum -c SHA256SUMS` checks a download.
func (c *Config) writeSums(as []Archive) error {
	var b strings.Builder
	sorted := slices.Clone(as)
	slices.SortFunc(sorted, func(x, y Archive) int { return strings.Compare(x.Name, y.Name) })
	for _, a := range sorted {
		fmt.Fprintf(&b, "%s  %s\n", a.SHA256, a.Name)
	}
	return os.WriteFile(filepath.Join(c.Out, "SHA256SUMS"), []byte(b.String()), 0o644)
}

// Agent is the ACP registry entry (agent.json).
type Agent struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	Description  string   `json:"description"`
	Repository   string   `json:"repository"`
	Authors      []string `json:"authors"`
	License      string   `json:"license"`
	Distribution struct {
		Binary map[string]BinaryTarget `json:"binary"`
	} `json:"distribution"`
}

// BinaryTarget is one platform's archive in the registry entry.
type BinaryTarget struct {
	Archive string   `json:"archive"`
	Cmd     string   `json:"cmd"`
	Args    []string `json:"args,omitempty"`
}

func (c *Config) agentJSON(as []Archive) ([]byte, error) {
	bin := map[string]BinaryTarget{}
	for _, a := range as {
		bin[a.Platform] = BinaryTarget{Archive: c.BaseURL + "/" + a.Name, Cmd: "./" + exe(a.Target), Args: []string{"serve"}}
	}
	entry := Agent{ID: "bridle", Name: "bridle", Version: c.Version,
		Description: "A durable coding agent: sessions survive crashes and restarts; on Linux its commands and language servers run in a sandbox",
		Repository:  "https://github.com/bridle-dev/bridle", Authors: []string{"bridle contributors"}, License: "MIT"}
	entry.Distribution.Binary = bin
	b, err := json.MarshalIndent(entry, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Validate checks an agent.json against the registry's schema, with its
// formats (uri) asserted.
func Validate(schemaPath string, agent []byte) error {
	f, err := os.Open(schemaPath)
	if err != nil {
		return err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return fmt.Errorf("reading the schema: %w", err)
	}
	jc := jsonschema.NewCompiler()
	jc.AssertFormat()
	const url = "https://cdn.agentclientprotocol.com/registry/v1/latest/agent.schema.json"
	if err := jc.AddResource(url, doc); err != nil {
		return err
	}
	s, err := jc.Compile(url)
	if err != nil {
		return fmt.Errorf("compiling the schema: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(agent))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}
