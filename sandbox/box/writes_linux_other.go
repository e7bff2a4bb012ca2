//go:build linux && !amd64 && !arm64

package box

// watchedCalls is empty where the box has no seccomp filter.
func watchedCalls() []watchedCall { return nil }
