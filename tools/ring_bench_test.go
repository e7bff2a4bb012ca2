package tools

import (
	"bytes"
	"io"
	"strconv"
	"testing"
)

// BenchmarkMicroBackgroundRing (micro: a background command's output
// ring alone, no process, no read) writes a command's output, in the
// pieces a pipe gives, to a ring that is already full: what every write
// of a server that has printed more than 256 KiB costs.
//
// BenchmarkMicroBackgroundRingLive is the same through the path a
// command's output takes when the editor is shown it as it comes
// (Background.Live): teed into the ring and the live tail, both full.
func BenchmarkMicroBackgroundRing(b *testing.B) {
	benchRing(b, func(c *bgCommand) io.Writer { return c })
}

func BenchmarkMicroBackgroundRingLive(b *testing.B) {
	benchRing(b, func(c *bgCommand) io.Writer { return io.MultiWriter(c, &liveTail{}) })
}

func benchRing(b *testing.B, writer func(*bgCommand) io.Writer) {
	for _, size := range []int{80, 4 << 10, 32 << 10} {
		b.Run(byteSize(size), func(b *testing.B) {
			c := &bgCommand{changed: make(chan struct{}), out: newOutputRing(backgroundRing)}
			w := writer(c)
			line := append(bytes.Repeat([]byte("x"), size-1), '\n')
			for range backgroundRing/size + 1 {
				w.Write(line)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				w.Write(line)
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
