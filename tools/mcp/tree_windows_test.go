package mcp

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/windows"
)

// With MCP_TREE_TEST set, the test binary is a stand-in server: "server"
// starts itself as "child", prints the child's pid on stderr and waits;
// "child" waits to be killed.
func init() {
	switch os.Getenv("MCP_TREE_TEST") {
	case "":
		return
	case "server":
		self, _ := os.Executable()
		c := exec.Command(self)
		c.Env = append(os.Environ(), "MCP_TREE_TEST=child")
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "spawn failed:", err)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "child", c.Process.Pid)
	}
	for {
		time.Sleep(time.Hour)
	}
}

// A stdio server and what it starts are in one Job Object: they run, and
// killing the tree ends both.
func TestServerTree(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "MCP_TREE_TEST=server")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	tree := newServerTree(cmd)
	conn, err := tree.transport(&sdk.CommandTransport{Command: cmd, TerminateDuration: time.Second}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The server runs (it was resumed) and started its child.
	line, err := bufio.NewReader(stderr).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "child ")))
	if err != nil || perr != nil {
		t.Fatalf("the server did not start its child: %q, %v", line, err)
	}
	tree.kill()
	for _, p := range []int{cmd.Process.Pid, pid} {
		h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(p))
		if err != nil {
			continue // gone already
		}
		ev, err := windows.WaitForSingleObject(h, 20_000)
		windows.CloseHandle(h)
		if err != nil || ev != windows.WAIT_OBJECT_0 {
			t.Errorf("process %d outlived the server's tree", p)
		}
	}
}
