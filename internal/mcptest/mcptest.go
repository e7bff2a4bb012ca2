// Package mcptest builds and starts testdata/mcpserver, the small MCP
// server that bridle's tests connect to, so the sandbox's unit tests and
// the end-to-end tests share one way of getting it.
package mcptest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary returns the test server, built once per test process.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, err := os.MkdirTemp("", "bridle-mcpserver-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "mcpserver")
		cmd := exec.Command("go", "build", "-o", binPath, "./testdata/mcpserver")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build the test MCP server: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
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
