package tools

import (
	"bytes"
	"strings"
	"testing"
)

// TestOutputRing checks the ring against the plain buffer it replaces
// (append, then drop the front past size), after each write: what is
// kept, from any offset, and where its last line ends.
func TestOutputRing(t *testing.T) {
	tests := []struct {
		name   string
		size   int
		writes []string
	}{
		{"empty", 8, nil},
		{"under its size", 8, []string{"ab", "c\nd"}},
		{"exactly full", 8, []string{"abcd", "efgh"}},
		{"wraps once", 8, []string{"abcdef", "gh\nijk"}},
		{"wraps many times in small writes", 5, strings.Split("the quick\nbrown fox jumps\nover the lazy dog", "")},
		{"a write larger than the ring", 4, []string{"ab", "cdefghij\nk", "l"}},
		{"a write of its size once full", 4, []string{"abc", "defg", "hi\nj"}},
		{"empty writes", 4, []string{"", "ab", "", "cdef", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newOutputRing(tt.size)
			var all []byte
			for i, w := range tt.writes {
				if n, err := r.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("write %d: %d, %v", i, n, err)
				}
				all = append(all, w...)
				kept := int64(max(len(all)-tt.size, 0))
				if r.total != int64(len(all)) || r.kept() != kept {
					t.Fatalf("after write %d: total %d kept %d, want %d and %d", i, r.total, r.kept(), len(all), kept)
				}
				for from := int64(0); from <= r.total; from++ {
					for to := from; to <= r.total; to++ {
						want := string(all[max(from, kept):max(to, kept)])
						if got := r.text(from, to); got != want {
							t.Fatalf("after write %d: text(%d, %d) = %q, want %q", i, from, to, got, want)
						}
					}
					want := int64(-1)
					if j := bytes.LastIndexByte(all[max(from, kept):], '\n'); j >= 0 {
						want = max(from, kept) + int64(j)
					}
					if got := r.lastIndexByte(from, '\n'); got != want {
						t.Fatalf("after write %d: lastIndexByte(%d) = %d, want %d", i, from, got, want)
					}
				}
			}
		})
	}
}
