package mcp

import (
	"context"
	"os/exec"

	"github.com/bridle-dev/bridle/sandbox/winjob"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverTree is a stdio server's Job Object: the server and everything it
// starts, killed together when bridle closes it or dies.
type serverTree struct {
	cmd *exec.Cmd
	job *winjob.Job
	err error // why there is no job
}

// newServerTree makes the job and has cmd start suspended, to be put in
// it before it runs (transport).
func newServerTree(cmd *exec.Cmd) *serverTree {
	job, err := winjob.New(winjob.Limits{})
	if err == nil {
		winjob.Prepare(cmd)
	}
	return &serverTree{cmd: cmd, job: job, err: err}
}

// transport starts the server through ct, then puts it in the job and
// lets it run; a server that cannot be put in its job is not run.
func (t *serverTree) transport(ct *sdk.CommandTransport) sdk.Transport {
	return &jobTransport{ct, t}
}

type jobTransport struct {
	*sdk.CommandTransport
	tree *serverTree
}

func (j *jobTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	if j.tree.err != nil {
		return nil, j.tree.err
	}
	conn, err := j.CommandTransport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := j.tree.job.Adopt(j.tree.cmd); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// kill ends the server and everything it started.
func (t *serverTree) kill() {
	if t.job != nil {
		t.job.Close()
	}
}
