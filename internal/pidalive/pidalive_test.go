package pidalive

import (
	"os"
	"os/exec"
	"testing"
)

func TestExists(t *testing.T) {
	if !Exists(os.Getpid()) {
		t.Errorf("this process is not found")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if Exists(cmd.Process.Pid) {
		t.Errorf("a process that exited and was waited for is found")
	}
}
