package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// MaxEditBytes bounds the files edit_file and write_file handle.
const MaxEditBytes = 10 << 20

// maxDiffText bounds the file texts put in a diff for the editor; past it
// only the changed region is sent.
const maxDiffText = 256 << 10

// Hash returns the hash recorded for file content.
func Hash(content []byte) string {
	sum := sha256.Sum256(content)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// HashFile returns the hash of a workspace file's content, or "" when it
// does not exist. A restart compares it with a FileEdit's hashes.
// With buffers it hashes what the editor holds: an edit the editor took
// before a crash is in its buffer, saved or not. (A file created through
// an editor that did not save it is in its buffer only: HashUnsaved.)
func HashFile(ctx context.Context, env *Env, path string) (string, error) {
	if data, ok := diskIfBinary(env, path); ok {
		return Hash(data), nil
	}
	data, exists, _, err := readFileText(ctx, env, path)
	if err != nil || !exists {
		return "", err
	}
	return Hash(data), nil
}

// HashUnsaved returns the hash of the text the editor holds for a file
// that is not on disk, and false when it holds none: a restart asks it
// about a file a write was to create, which an editor that does not save
// what it is sent holds only in a buffer. Asked only then: an editor may
// keep the text of a file removed on disk in its buffer, which is not the
// file (a rewind, and undoing one, go by the disk).
func HashUnsaved(ctx context.Context, env *Env, path string) (string, bool) {
	if !env.usesEditor() {
		return "", false
	}
	text, ok := unsavedNewText(ctx, env, path)
	if !ok {
		return "", false
	}
	return Hash([]byte(text)), true
}

// unchanged reports whether a file's hash is still before ("" for a file
// that does not exist): a plan computed earlier in the call still holds.
// It reads and hashes the file; the diff and its redaction are not done
// again. An error says why the file could not be read (through the
// editor: it did not answer, or a command of another session still
// runs). from says where it read the file: the write goes there
// (plannedOn).
func unchanged(ctx context.Context, env *Env, path, before string) (same bool, from textSource, err error) {
	// As the edit read it: its text (edits are of text files).
	data, exists, from, err := readFileText(ctx, env, path)
	if err != nil {
		return false, from, err
	}
	if !exists {
		return before == "", from, nil
	}
	return Hash(data) == before, from, nil
}

// editDiff builds the editor's view of an edit, redacted. Large files get
// only the changed region, and only it is redacted.
func editDiff(env *Env, path string, old []byte, exists bool, new []byte) *Diff {
	d := &Diff{Path: env.Root.Abs(path)}
	oldText, newText := string(old), string(new)
	if len(old) > maxDiffText || len(new) > maxDiffText {
		oldText, newText = changedRegion(oldText, newText)
	}
	if exists {
		o := env.redact(oldText)
		d.OldText = &o
	}
	d.NewText = env.redact(newText)
	return d
}

// redactedDiff builds the editor's view of an edit from the file's texts
// already redacted (old is nil for a new file). Large files get only the
// changed region.
func redactedDiff(path string, old *string, new string) *Diff {
	d := &Diff{Path: path, NewText: new}
	if old == nil {
		return d
	}
	o := *old
	if len(o) > maxDiffText || len(new) > maxDiffText {
		o, d.NewText = changedRegion(o, new)
	}
	d.OldText = &o
	return d
}

// changedRegion returns the lines that differ between a and b, with the
// common lines at both ends dropped.
func changedRegion(a, b string) (string, string) {
	al, bl := strings.SplitAfter(a, "\n"), strings.SplitAfter(b, "\n")
	p, s := commonEnds(al, bl)
	return strings.Join(al[p:len(al)-s], ""), strings.Join(bl[p:len(bl)-s], "")
}

func commonEnds(a, b []string) (prefix, suffix int) {
	for prefix < len(a) && prefix < len(b) && a[prefix] == b[prefix] {
		prefix++
	}
	for suffix < len(a)-prefix && suffix < len(b)-prefix && a[len(a)-1-suffix] == b[len(b)-1-suffix] {
		suffix++
	}
	return prefix, suffix
}

// hunk renders the change from a to b as one unified-diff hunk with ctx
// lines of context, for the model; at most max lines of it.
func hunk(a, b string, ctx, max int) string {
	al, bl := splitLines(a), splitLines(b)
	p, s := commonEnds(al, bl)
	start := max0(p - ctx)
	aEnd := min(len(al), len(al)-s+ctx)
	bEnd := min(len(bl), len(bl)-s+ctx)
	var lines []string
	for i := start; i < p; i++ {
		lines = append(lines, " "+al[i])
	}
	for i := p; i < len(al)-s; i++ {
		lines = append(lines, "-"+al[i])
	}
	for i := p; i < len(bl)-s; i++ {
		lines = append(lines, "+"+bl[i])
	}
	for i := len(al) - s; i < aEnd; i++ {
		lines = append(lines, " "+al[i])
	}
	var out strings.Builder
	fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", start+1, aEnd-start, start+1, bEnd-start)
	for i, l := range lines {
		if i == max {
			fmt.Fprintf(&out, "[%d more diff lines]\n", len(lines)-max)
			break
		}
		out.WriteString(l)
		out.WriteByte('\n')
	}
	return out.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func max0(n int) int { return max(n, 0) }

// lineOf returns the 1-based line of byte offset i in s.
func lineOf(s string, i int) int { return strings.Count(s[:i], "\n") + 1 }
