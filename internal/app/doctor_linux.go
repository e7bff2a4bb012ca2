package app

import (
	"os"
	"strings"
)

// watchLimit is inotify's limit on watches.
func watchLimit() string {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches")
	if err != nil {
		return "set by the OS"
	}
	return "fs.inotify.max_user_watches = " + strings.TrimSpace(string(b))
}
