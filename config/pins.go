package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bridle-dev/bridle/workspace"
)

// Pins are the records of what the user accepted of each trusted
// project's settings: one file per project directory in Dir, each
// written whole or not at all.
type Pins struct {
	// Dir holds the records; "" when the environment names no data
	// directory, and then nothing can be pinned: no project's trusted
	// keys apply.
	Dir string
	// ReadOnly records nothing: a read that would make the first record
	// of a project says so instead (bridle doctor reports, and does not
	// accept).
	ReadOnly bool
}

// Pin is the record of one project.
type Pin struct {
	// Project is the project directory (absolute, cleaned).
	Project string `json:"project"`
	// Digest is TrustedDigest of the file the user accepted.
	Digest string `json:"digest"`
	// Accepted is when.
	Accepted time.Time `json:"accepted"`
}

// PinsDir is where bridle keeps its records of trust: trust/ in DataDir;
// "" when the environment names no data directory.
func PinsDir(getenv func(string) string) string {
	if d := DataDir(getenv); d != "" {
		return filepath.Join(d, "trust")
	}
	return ""
}

// errNoPins says there is nowhere to keep records.
var errNoPins = errors.New("no data directory to keep the record in (neither XDG_DATA_HOME nor HOME is set)")

// path is the record of project: named by a digest of the directory,
// which may hold any character.
func (p Pins) path(project string) string {
	sum := sha256.Sum256([]byte(project))
	return filepath.Join(p.Dir, hex.EncodeToString(sum[:16])+".json")
}

// Get returns the record of project (a cleaned absolute directory);
// fs.ErrNotExist when there is none, another error when it cannot be
// read or is not a record of project.
func (p Pins) Get(project string) (Pin, error) {
	if p.Dir == "" {
		return Pin{}, errNoPins
	}
	data, err := workspace.ReadRegular(p.path(project))
	if err != nil {
		return Pin{}, err
	}
	pin, err := decodePin(data)
	if err == nil && pin.Project != project {
		err = fmt.Errorf("it is the record of %s", pin.Project)
	}
	if err != nil {
		return Pin{}, fmt.Errorf("record %s: %w", p.path(project), err)
	}
	return pin, nil
}

func decodePin(data []byte) (Pin, error) {
	var pin Pin
	if err := json.Unmarshal(data, &pin); err != nil {
		return Pin{}, fmt.Errorf("not a record of trust: %w", err)
	}
	if pin.Project == "" || !strings.HasPrefix(pin.Digest, "sha256:") {
		return Pin{}, errors.New("not a record of trust: no project or digest")
	}
	return pin, nil
}

// Set records digest as what the user accepted of project's settings. The
// record is written to a temporary file that is renamed over the old
// one: a crash leaves the old record or the new, never half of one.
func (p Pins) Set(project, digest string) error {
	if p.Dir == "" {
		return errNoPins
	}
	if p.ReadOnly {
		return fmt.Errorf("record the trust of %s: the records are read-only here", project)
	}
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(Pin{Project: project, Digest: digest, Accepted: time.Now().UTC()})
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(p.Dir, ".pin-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p.path(project))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("record the trust of %s: %w", project, err)
	}
	return nil
}

// List returns every record, sorted by project, and the record files
// that could not be read.
func (p Pins) List() ([]Pin, []error) {
	if p.Dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(p.Dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, []error{err}
	}
	var pins []Pin
	var errs []error
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(p.Dir, e.Name())
		data, err := workspace.ReadRegular(path)
		var pin Pin
		if err == nil {
			pin, err = decodePin(data)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("record %s: %w", path, err))
			continue
		}
		pins = append(pins, pin)
	}
	slices.SortFunc(pins, func(a, b Pin) int { return strings.Compare(a.Project, b.Project) })
	return pins, errs
}
