package tools

import (
	"bytes"
	"strconv"
	"testing"
)

// BenchmarkMicroBackgroundRing (micro: a background command's output
// ring alone, no process, no read) writes a command's output, in the
// pieces a pipe gives, to a ring that is already full: what every write
// of a server that has printed more than 256 KiB costs.
func BenchmarkMicroBackgroundRing(b *testing.B) {
	for _, size := range []int{80, 4 << 10, 32 << 10} {
		b.Run(byteSize(size), func(b *testing.B) {
			c := &bgCommand{changed: make(chan struct{}), out: newOutputRing(backgroundRing)}
			line := append(bytes.Repeat([]byte("x"), size-1), '\n')
			for range backgroundRing/size + 1 {
				c.Write(line)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				c.Write(line)
			}
		})
	}
}

func byteSize(n int) string {
	switch {
	case n >= 1<<10:
		return strconv.Itoa(n>>10) + "KiB"
	default:
		return strconv.Itoa(n) + "B"
	}
}
