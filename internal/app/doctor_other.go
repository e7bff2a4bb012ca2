//go:build !linux

package app

// watchLimit is the OS's own: there is no inotify limit to read here.
func watchLimit() string { return "set by the OS" }
