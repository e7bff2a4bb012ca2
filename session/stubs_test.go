package session

import (
	"testing"

	"github.com/bridle-dev/bridle/contextwin"
)

// A session opened from the store reads the usage of the latest calls
// the model sees, counted past those a rewind went back over.
func TestCorrectionFromTheCallsTheModelSees(t *testing.T) {
	n := int64(contextwin.RatioCalls)
	// calls are the seqs 10, 20, …: a model message every ten events.
	calls := func(k int64) []int64 {
		out := make([]int64, k)
		for i := range out {
			out[i] = int64(10 * (i + 1))
		}
		return out
	}
	for _, tt := range []struct {
		name   string
		calls  []int64
		ranges [][2]int64
		want   int64
	}{
		{"no calls", nil, nil, 0},
		{"as many calls as followed: all read", calls(n), nil, 0},
		{"one more: read after it", calls(n + 1), nil, 10},
		{"many more", calls(n + 50), nil, 500},
		{"a rewind went back over the latest ten", calls(n + 10), [][2]int64{{10*n + 5, 10*n + 105}}, 0},
		{"a rewind went back over ten in the middle", calls(n + 11), [][2]int64{{305, 405}}, 10},
		{"a rewind went back over nine in the middle", calls(n + 11), [][2]int64{{305, 395}}, 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := correctionFrom(tt.calls, tt.ranges); got != tt.want {
				t.Fatalf("correctionFrom = %d, want %d", got, tt.want)
			}
		})
	}
}
