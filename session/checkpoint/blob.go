package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The data directory keeps contents by their sha256 in three places:
// images (images/), checkpoints (checkpoints/SESSION/) and the snapshot
// around commands (checkpoints/SESSION/snapshot/). One file per content,
// named by its hex digest, written whole and renamed so that a reader
// never finds half of one.

// StoreBlob writes data as dir/name unless it is there; created says
// whether it wrote it.
func StoreBlob(dir, name string, data []byte) (created bool, err error) {
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err == nil {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		os.Remove(tmp)
		return false, err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return false, err
	}
	return true, nil
}

// BlobName is a hash as tools.Hash writes it ("sha256:HEX") as a blob's
// file name; ok is false for anything else, so that a hash read from the
// log never walks out of its directory.
func BlobName(hash string) (string, bool) {
	name, ok := strings.CutPrefix(hash, "sha256:")
	return name, ok && IsDigest(name)
}

// IsDigest says whether name is a sha256 digest in lower-case hex.
func IsDigest(name string) bool {
	return len(name) == 64 && strings.Trim(name, "0123456789abcdef") == ""
}
