package session

import (
	"os"
	"testing"

	"github.com/bridle-dev/bridle/sandbox/box"
)

// TestMain lets the box re-run this test binary as its helper, as it runs
// bridle's own binary, when a test or benchmark runs a command.
func TestMain(m *testing.M) {
	box.MaybeRunHelper()
	os.Exit(m.Run())
}
