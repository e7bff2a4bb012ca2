package box

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	MaybeRunHelper()
	os.Exit(m.Run())
}

// syncBuffer is an output sink safe for the box's copying goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func run(t *testing.T, b *Box, dir, command string, tweak ...func(*Spec)) (Outcome, string) {
	t.Helper()
	var out syncBuffer
	s := Spec{Command: command, Dir: dir, Writable: []string{dir}, Output: &out, Timeout: 20 * time.Second,
		MemoryBytes: 1 << 30, Processes: 512, Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir}}
	for _, f := range tweak {
		f(&s)
	}
	o, err := b.Run(context.Background(), s)
	if err != nil {
		t.Fatalf("Run(%q): %v", command, err)
	}
	return o, out.String()
}
