//go:build !unix

package config

import "io/fs"

func inode(fs.FileInfo) (dev, ino uint64) { return 0, 0 }
