package mcp

import (
	"os"
	"testing"

	"github.com/bridle-dev/bridle/internal/mcptest"
)

// TestMain removes the test MCP server the tests built once they have
// run: tests leave nothing in the temporary directory.
func TestMain(m *testing.M) {
	code := m.Run()
	mcptest.Cleanup()
	os.Exit(code)
}
