//go:build !linux

package box

import (
	"context"
	"errors"
)

// MaybeRunHelper returns at once: there is no helper outside Linux.
func MaybeRunHelper() {}

// There are no helpers or cgroups outside Linux.
type (
	helper     struct{}
	cgroupBase struct{}
)

// WatchesWrites says that commands' writes cannot be watched here: that
// takes Linux's seccomp.
func (b *Box) WatchesWrites() error {
	return errors.New("watching what commands write needs Linux (seccomp)")
}

// Close does nothing: there is no spare helper outside Linux.
func (b *Box) Close() error { return nil }

// ErrNoBox is Start's answer outside Linux.
var ErrNoBox = errors.New("language servers run only in the Linux box (namespaces, Landlock, seccomp), which this system does not have; bridle does not start them here, because a server runs the repository's code (build scripts, plugins, the toolchain its settings name) the moment a file is opened")

// Start refuses: outside Linux nothing would keep a long-lived process
// in. A command is one the user can be asked about (full-auto asks before
// the first); a language server would start on an edit, unasked, and run
// the repository's code with the user's rights.
func (b *Box) Start(context.Context, Spec) (*Process, error) {
	return nil, ErrNoBox
}

// KeepsServers says why long-lived processes cannot be kept in here.
func (b *Box) KeepsServers() error { return ErrNoBox }
