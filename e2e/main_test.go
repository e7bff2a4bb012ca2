package e2e

import (
	"os"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/internal/lsptest"
	"github.com/bridle-dev/bridle/internal/mcptest"
)

// TestMain removes the binaries the tests built (bridle, the test MCP
// server, the fake language server) once they have run: tests leave nothing in the temporary
// directory.
func TestMain(m *testing.M) {
	code := m.Run()
	acptest.Cleanup()
	mcptest.Cleanup()
	lsptest.Cleanup()
	os.Exit(code)
}
