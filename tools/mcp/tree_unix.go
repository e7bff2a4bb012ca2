//go:build unix

package mcp

import (
	"os/exec"
	"syscall"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverTree is a stdio server's process group.
type serverTree struct{ cmd *exec.Cmd }

// newServerTree makes cmd the first process of its own group.
func newServerTree(cmd *exec.Cmd) *serverTree {
	cmd.SysProcAttr = serverProcAttr()
	return &serverTree{cmd: cmd}
}

func (t *serverTree) transport(ct *sdk.CommandTransport) sdk.Transport { return ct }

// kill ends whatever is left of the group: it outlives its leader while
// members remain (ESRCH: nothing is left).
func (t *serverTree) kill() {
	if t.cmd.Process != nil {
		syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
	}
}
