package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Artifacts keeps the whole output of calls whose result was capped, one
// file per call in the session's data directory. Everything written here
// is already redacted.
type Artifacts struct {
	dir string
	// Max bounds one artifact; what comes after is counted, not kept.
	Max int64
}

// DefaultArtifactMax bounds one artifact file.
const DefaultArtifactMax = 64 << 20

// NewArtifacts returns the artifact store in dir, creating it private to
// the user.
func NewArtifacts(dir string) (*Artifacts, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("artifact directory: %w", err)
	}
	return &Artifacts{dir: dir, Max: DefaultArtifactMax}, nil
}

// Dir returns the directory the artifacts are kept in.
func (a *Artifacts) Dir() string { return a.dir }

// ArtifactID names the artifact of the call with idempotency key key
// (session/seq/index): "a<seq>.<index>", short enough for the model to
// quote and the same on every replay of the call.
func ArtifactID(key string) string {
	parts := strings.Split(key, "/")
	if len(parts) >= 3 && digits(parts[len(parts)-2]) && digits(parts[len(parts)-1]) {
		return "a" + parts[len(parts)-2] + "." + parts[len(parts)-1]
	}
	sum := sha256.Sum256([]byte(key))
	return "a" + hex.EncodeToString(sum[:4])
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (a *Artifacts) path(id string) (string, error) {
	if id == "" || len(id) > 64 || strings.ContainsAny(id, "/\\") || strings.HasPrefix(id, ".") {
		return "", fmt.Errorf("%q is not an artifact id: use the id a capped result named, like a12.0", id)
	}
	return filepath.Join(a.dir, id+".txt"), nil
}

// Create opens the artifact id for writing, replacing an older one.
func (a *Artifacts) Create(id string) (*os.File, error) {
	p, err := a.path(id)
	if err != nil {
		return nil, err
	}
	return os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
}

// Read returns the content of artifact id.
func (a *Artifacts) Read(id string) ([]byte, error) {
	p, err := a.path(id)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return nil, fmt.Errorf("no artifact %s in this session: use an id a capped result named", id)
	}
	return b, err
}

// Keep writes text, whole, as artifact id: the output of a call that
// made no artifact of its own, kept before the context window cuts it.
func (a *Artifacts) Keep(id, text string) error {
	if int64(len(text)) > a.Max {
		return fmt.Errorf("%d bytes, over the %d-byte bound of an artifact", len(text), a.Max)
	}
	f, err := a.Create(id)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
