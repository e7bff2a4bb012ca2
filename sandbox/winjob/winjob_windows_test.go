package winjob

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

var isProcessInJob = windows.NewLazySystemDLL("kernel32.dll").NewProc("IsProcessInJob")

// The job carries the caps it was made with, and kills on close with no
// way out for its processes.
func TestLimits(t *testing.T) {
	j, err := New(Limits{Processes: 7, MemoryBytes: 96 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	if err := windows.QueryInformationJobObject(j.h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil); err != nil {
		t.Fatal(err)
	}
	flags := info.BasicLimitInformation.LimitFlags
	want := uint32(windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS | windows.JOB_OBJECT_LIMIT_JOB_MEMORY)
	if flags&want != want {
		t.Errorf("limit flags %#x, want %#x set", flags, want)
	}
	if flags&(windows.JOB_OBJECT_LIMIT_BREAKAWAY_OK|windows.JOB_OBJECT_LIMIT_SILENT_BREAKAWAY_OK) != 0 {
		t.Errorf("limit flags %#x let processes leave the job", flags)
	}
	if got := info.BasicLimitInformation.ActiveProcessLimit; got != 7 {
		t.Errorf("active process limit %d, want 7", got)
	}
	if got := info.JobMemoryLimit; got != 96<<20 {
		t.Errorf("job memory limit %d, want %d", got, 96<<20)
	}
}

// A process adopted is in the job, runs, and dies with the job.
func TestAdoptRunsTheProcessInTheJob(t *testing.T) {
	if os.Getenv("WINJOB_TEST_SLEEP") != "" {
		// The test binary as the adopted process: it says it runs, then
		// waits to be killed.
		fmt.Println("running")
		for {
			time.Sleep(time.Hour)
		}
	}
	j, err := New(Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	self, _ := os.Executable()
	cmd := exec.Command(self, "-test.run=^TestAdoptRunsTheProcessInTheJob$")
	cmd.Env = append(os.Environ(), "WINJOB_TEST_SLEEP=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	Prepare(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := j.Adopt(cmd); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.HasPrefix(line, "running") {
		t.Fatalf("the adopted process did not run: %q, %v", line, err)
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_INFORMATION|windows.SYNCHRONIZE, false, uint32(cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(h)
	var in int32
	if r, _, err := isProcessInJob.Call(uintptr(h), uintptr(j.h), uintptr(unsafe.Pointer(&in))); r == 0 || in == 0 {
		t.Fatalf("the adopted process is not in the job (%v)", err)
	}
	j.Close()
	if ev, err := windows.WaitForSingleObject(h, 20_000); err != nil || ev != windows.WAIT_OBJECT_0 {
		t.Errorf("the process outlived its job's close (%v)", err)
	}
	cmd.Wait()
}
