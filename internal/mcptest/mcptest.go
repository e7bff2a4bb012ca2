// Package mcptest builds and starts testdata/mcpserver, the small MCP
// server that bridle's tests connect to, so the sandbox's unit tests and
// the end-to-end tests share one way of getting it.
package mcptest

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/testbin"
)

// Binary returns the test server, built once per test process.
func Binary(t testing.TB) string {
	t.Helper()
	return testbin.Build(t, "mcpserver", "the test MCP server")
}

// StartHTTP runs the test server over streamable HTTP on loopback and
// returns its URL. Requests must carry the header X-Test-Auth: header.
// The server stops when the test ends and its stdin closes.
func StartHTTP(t testing.TB, header string) string {
	t.Helper()
	cmd := exec.Command(Binary(t), "-http")
	cmd.Env = append(os.Environ(), "MCP_TEST_HEADER="+header)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	url, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the test MCP server printed no URL: %v", err)
	}
	return strings.TrimSpace(url)
}
