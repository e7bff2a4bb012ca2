//go:build linux

package box

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func requireCgroup(t *testing.T, b *Box, limits bool) *cgroupBase {
	t.Helper()
	b.once.Do(b.probeMachine)
	cg := b.caps.cgroup
	switch {
	case cg == nil:
		t.Skipf("this machine gives bridle no cgroup v2 (bridle doctor: %s): not tested here", b.caps.cgroupErr)
	case limits && !(cg.hasMemory() && cg.hasPids()):
		t.Skipf("the memory and pids controllers are not delegated here (bridle doctor: %s): cgroup limits not tested here", cg.describe())
	}
	return cg
}

func TestCommandRunsInItsOwnCgroup(t *testing.T) {
	for mode, b := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			cg := requireCgroup(t, b, false)
			o, out := marked(t, b, context.Background(), `cat /proc/self/cgroup; (setsid sleep 300 &) ; echo started`, nil)
			i := strings.Index(out, "/bridle-box-")
			if i < 0 {
				t.Fatalf("not in a box cgroup: %q (%v)", out, o.Applied)
			}
			name := strings.Fields(out[i+1:])[0]
			// Other tests run boxes in the same parent: look for this one only.
			if _, err := os.Stat(filepath.Join(cg.dir, name)); !os.IsNotExist(err) {
				t.Fatalf("the box cgroup %s was left in %s (%v)", name, cg.dir, err)
			}
		})
	}
}

func TestCgroupLimits(t *testing.T) {
	b := New(Options{})
	requireCgroup(t, b, true)
	// Four processes of 200 MiB each stay under the per-process address
	// space cap but not under the command's 512 MiB memory.max.
	_, out := marked(t, b, context.Background(), `for i in 1 2 3 4; do /usr/bin/python3 -c "
import time
b = bytearray(200 << 20)
for i in range(0, len(b), 4096): b[i] = 1
time.sleep(2)
print('held')" & done; wait; echo end`, func(s *Spec) { s.MemoryBytes = 512 << 20 })
	if strings.Count(out, "held") == 4 {
		t.Fatalf("800 MiB held under a 512 MiB memory.max: %q", out)
	}
	_, out = marked(t, b, context.Background(), `n=0; while [ $n -lt 120 ]; do sleep 5 & n=$((n+1)); done 2>&1 | head -1; echo end`, func(s *Spec) { s.Processes = 100 })
	if !strings.Contains(out, "fork") && !strings.Contains(out, "Resource") {
		t.Fatalf("120 processes under pids.max 100: %q", out)
	}
}
