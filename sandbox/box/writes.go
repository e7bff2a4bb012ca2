package box

import "context"

// Writes is told, before a command changes a file of its writable
// directories, which file: until Changing returns the command waits, and
// the file still holds what it held before the command changed it (what
// a checkpoint keeps). Changing is called from one goroutine at a time,
// never after Run has returned. ctx ends when the command is stopped (its
// timeout, a cancel) or done: Changing should then return at once, since
// Run waits for it, leaving undone what it could not do.
type Writes interface {
	Changing(ctx context.Context, c Change)
}

// Change is a file a command is about to change: open to write,
// truncate, create, remove, rename, link.
type Change struct {
	// Path is the file, absolute, below one of Spec.Writable as given
	// (links followed as the command's call follows them, so never a
	// link to a file elsewhere); "" when the call's file is outside them.
	Path string
	// To is, for a rename, where Path goes ("" outside the writable
	// directories); Exchange says Path and To trade places. A renamed
	// directory moves everything below it.
	To       string
	Exchange bool
	// Unknown says why the box could not tell which file the call
	// changes, with the path as the command gave it; Path and To are
	// empty then.
	Unknown string
}
