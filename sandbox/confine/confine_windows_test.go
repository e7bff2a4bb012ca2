package confine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/testfs"
)

// These tests hold the Root to its promises on Windows paths: drive
// letters, both separators, any case, and the names Win32 rewrites.

// Every spelling of a path inside the workspace reaches the file.
func TestWindowsPathsInside(t *testing.T) {
	ws := testfs.TempDir(t)
	testfs.Write(t, filepath.Join(ws, "sub", "a.txt"), "A\n")
	r := openRoot(t, ws)
	lower := strings.ToLower(ws[:1]) + ws[1:]
	for _, p := range []string{
		"sub/a.txt",
		`sub\a.txt`,
		`.\sub\..\sub\a.txt`,
		filepath.Join(ws, "sub", "a.txt"),
		filepath.ToSlash(filepath.Join(ws, "sub", "a.txt")),
		lower + `\sub\a.txt`,
		strings.ToUpper(ws) + `\SUB\A.TXT`,
	} {
		if b, err := r.ReadFile(p, 0); err != nil || string(b) != "A\n" {
			t.Errorf("ReadFile(%q) = %q, %v", p, b, err)
		}
	}
	if err := r.WriteFile(`sub\new\b.txt`, []byte("B\n")); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "sub", "new", "b.txt")); err != nil || string(b) != "B\n" {
		t.Errorf("the written file holds %q, %v", b, err)
	}
}

// Every way out is refused, with the path and the workspace named, and
// nothing outside changes.
func TestWindowsEscapes(t *testing.T) {
	ws, outside := testfs.TempDir(t), testfs.TempDir(t)
	secret := filepath.Join(outside, "secret.txt")
	testfs.Write(t, secret, "OUTSIDE\n")
	testfs.Write(t, filepath.Join(ws, "a.txt"), "A\n")
	rel, _ := filepath.Rel(ws, secret)
	r := openRoot(t, ws)
	vol := filepath.VolumeName(ws)
	for name, p := range map[string]string{
		"relative ..":          rel,
		"dot-dot, slashes":     filepath.ToSlash(rel),
		"absolute outside":     secret,
		"absolute, slashes":    filepath.ToSlash(secret),
		"rooted, no drive":     secret[len(vol):],
		"drive-relative":       vol + `a.txt`,
		"another drive":        `Q:\a.txt`,
		"Win32 device prefix":  `\\?\` + filepath.Join(ws, "a.txt"),
		"device namespace":     `\\.\` + filepath.Join(ws, "a.txt"),
		"UNC":                  `\\localhost\c$\Windows\win.ini`,
		"alternate data steam": `a.txt:hidden`,
		"default data stream":  `a.txt::$DATA`,
		"reserved name":        `NUL`,
		"reserved name, ext":   `sub\COM1.txt`,
	} {
		for _, o := range ops {
			t.Run(name+"/"+o.name, func(t *testing.T) {
				err := o.do(r, p)
				if err == nil {
					t.Fatalf("%s was not refused", p)
				}
				if msg := err.Error(); !strings.Contains(msg, ws) {
					t.Errorf("the refusal does not name the workspace %s: %q", ws, msg)
				}
			})
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "OUTSIDE\n" {
		t.Errorf("%s changed: %q", secret, b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("files appeared outside: %v", ents)
	}
}

// A hidden path is refused however it is spelt, and by its identity
// once renamed.
func TestWindowsHidden(t *testing.T) {
	ws := testfs.TempDir(t)
	testfs.Write(t, filepath.Join(ws, "Secret", "key.txt"), "KEY\n")
	testfs.Write(t, filepath.Join(ws, "open.txt"), "OPEN\n")
	notYet := filepath.Join(ws, "settings.json")
	r := openRoot(t, ws)
	r.HideOwn(filepath.Join(ws, "Secret"), notYet)
	for _, p := range []string{
		`Secret\key.txt`, `secret\key.txt`, `SECRET\KEY.TXT`, `Secret.\key.txt`, `Secret \key.txt`,
		filepath.Join(strings.ToLower(ws), "secret", "key.txt"), `Secret`,
	} {
		for _, o := range ops {
			if err := o.do(r, p); !errors.Is(err, ErrHiddenPath) {
				t.Errorf("%s(%q) = %v, want a hidden-path refusal", o.name, p, err)
			}
		}
	}
	// A hidden file that does not exist yet, written under another spelling.
	for _, p := range []string{"settings.json", "SETTINGS.JSON", "settings.json.", "settings.json  "} {
		if err := r.WriteFile(p, []byte("{}")); !errors.Is(err, ErrHiddenPath) {
			t.Errorf("WriteFile(%q) = %v, want a hidden-path refusal", p, err)
		}
	}
	if _, err := os.Stat(notYet); !os.IsNotExist(err) {
		t.Errorf("the hidden file was created: %v", err)
	}
	// Renamed, the hidden directory is still itself.
	if err := os.Rename(filepath.Join(ws, "Secret"), filepath.Join(ws, "renamed")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadFile(`renamed\key.txt`, 0); !errors.Is(err, ErrHiddenPath) {
		t.Errorf("the renamed hidden directory's file was read: %v", err)
	}
	ents, err := r.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "renamed" {
			t.Errorf("the listing shows the renamed hidden directory")
		}
	}
	tree, err := r.OpenTree(".")
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	var found []string
	tree.Walk(context.Background(), func(f File) error {
		found = append(found, f.Rel)
		return nil
	})
	if strings.Join(found, ",") != "open.txt" {
		t.Errorf("the walk found %v, want only open.txt", found)
	}
}

// A file with another hard link is refused: the other name may be
// outside the workspace (NumberOfLinks, from the file's handle).
func TestWindowsHardLinks(t *testing.T) {
	ws, outside := testfs.TempDir(t), testfs.TempDir(t)
	target := filepath.Join(outside, "target.txt")
	testfs.Write(t, target, "OUTSIDE\n")
	if err := os.Link(target, filepath.Join(ws, "link.txt")); err != nil {
		t.Fatalf("no hard link: %v", err)
	}
	r := openRoot(t, ws)
	if _, err := r.ReadFile("link.txt", 0); !errors.Is(err, ErrLinked) {
		t.Errorf("ReadFile of a hard link = %v, want ErrLinked", err)
	}
	if err := r.WriteFile("link.txt", []byte("PWNED")); !errors.Is(err, ErrLinked) {
		t.Errorf("WriteFile of a hard link = %v, want ErrLinked", err)
	}
	tree, err := r.OpenTree(".")
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	tree.Walk(context.Background(), func(f File) error {
		if _, err := tree.Read(f, 1<<20); !errors.Is(err, ErrLinked) {
			t.Errorf("the walk read %s: %v", f.Rel, err)
		}
		return nil
	})
	if b, _ := os.ReadFile(target); string(b) != "OUTSIDE\n" {
		t.Errorf("the file outside changed: %q", b)
	}
}
