package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInstructionsNearestLast(t *testing.T) {
	top := t.TempDir()
	sub := filepath.Join(top, "pkg", "inner")
	must(t, os.MkdirAll(sub, 0o755))
	must(t, os.Mkdir(filepath.Join(top, ".git"), 0o755))
	must(t, os.WriteFile(filepath.Join(top, "AGENTS.md"), []byte("top rules"), 0o644))
	must(t, os.WriteFile(filepath.Join(sub, "AGENTS.md"), []byte("inner rules"), 0o644))
	// Outside the repository: must not be read.
	must(t, os.WriteFile(filepath.Join(filepath.Dir(top), "AGENTS.md"), []byte("outside"), 0o644))
	defer os.Remove(filepath.Join(filepath.Dir(top), "AGENTS.md"))

	w, err := Open(sub, nil)
	must(t, err)
	docs, skipped := w.Instructions(readPlain)
	if len(skipped) != 0 {
		t.Fatalf("skipped: %v", skipped)
	}
	if len(docs) != 2 || docs[0].Text != "top rules" || docs[1].Text != "inner rules" {
		t.Fatalf("docs = %+v", docs)
	}
	if r := Render(docs); !strings.Contains(r, "Instructions from "+filepath.Join(sub, "AGENTS.md")) {
		t.Fatalf("render lacks the path: %s", r)
	}
}

// TestInstructionsSayWhatWasLeftOut: an instruction file the reader
// refused as a .env file is skipped and named in the instructions, so the
// model is told it is missing; one refused for another reason is skipped
// only.
func TestInstructionsSayWhatWasLeftOut(t *testing.T) {
	top := t.TempDir()
	sub := filepath.Join(top, "sub")
	must(t, os.MkdirAll(sub, 0o755))
	must(t, os.Mkdir(filepath.Join(top, ".git"), 0o755))
	must(t, os.WriteFile(filepath.Join(top, "AGENTS.md"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(sub, "AGENTS.md"), nil, 0o644))
	read := func(dir, name string) ([]byte, error) {
		if dir == top {
			return nil, fmt.Errorf("%s is a link to the .env file %s: %w", filepath.Join(dir, name), filepath.Join(top, ".env"), ErrDotEnv)
		}
		return nil, errors.New("a link out of the directory")
	}
	w, err := Open(sub, nil)
	must(t, err)
	docs, skipped := w.Instructions(read)
	if len(skipped) != 2 {
		t.Fatalf("skipped = %v, want both files", skipped)
	}
	if len(docs) != 1 || docs[0].Path != filepath.Join(top, "AGENTS.md") || !strings.Contains(docs[0].Text, "left out") || !strings.Contains(docs[0].Text, ErrDotEnv.Error()) {
		t.Fatalf("docs = %+v, want a note for the top's AGENTS.md only", docs)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "file")
	must(t, os.WriteFile(f, nil, 0o644))
	for _, c := range []struct{ dir, want string }{
		{"relative", "not absolute"},
		{filepath.Join(dir, "missing"), "no such file"},
		{f, "is a file"},
	} {
		if _, err := Open(c.dir, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%q) = %v, want %q", c.dir, err, c.want)
		}
	}
	if _, err := Open(dir, []string{"rel"}); err == nil {
		t.Error("relative additional directory accepted")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// readPlain reads a file below dir with no confinement but ReadRegular's:
// what confine.ProjectFiles adds is tested there.
func readPlain(dir, name string) ([]byte, error) {
	return ReadRegular(filepath.Join(dir, name))
}
