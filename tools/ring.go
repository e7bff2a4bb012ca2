package tools

import "bytes"

// outputRing keeps the last size bytes written to it and counts them
// all: a byte is named by its offset in everything ever written, so a
// reader remembers where it stopped and learns how much was dropped
// since. Once full it is written in place, from its oldest byte on: a
// write costs what it writes, not what the ring holds.
type outputRing struct {
	size  int
	buf   []byte // grows up to size, then stays
	start int    // where the oldest byte kept is in buf (0 until full)
	total int64  // bytes ever written
}

func newOutputRing(size int) *outputRing { return &outputRing{size: size} }

func (r *outputRing) Write(p []byte) (int, error) {
	n := len(p)
	r.total += int64(n)
	if len(p) >= r.size {
		// Only its end is kept: the ring holds nothing older.
		r.buf = append(r.buf[:0], p[len(p)-r.size:]...)
		r.start = 0
		return n, nil
	}
	if grow := min(r.size-len(r.buf), len(p)); grow > 0 {
		r.buf = append(r.buf, p[:grow]...)
		p = p[grow:]
	}
	for len(p) > 0 {
		c := copy(r.buf[r.start:], p)
		p = p[c:]
		r.start = (r.start + c) % r.size
	}
	return n, nil
}

// kept is the offset of the oldest byte still kept.
func (r *outputRing) kept() int64 { return r.total - int64(len(r.buf)) }

// since returns the bytes kept from offset off (or from the oldest kept,
// if off is older) to the end, in two pieces, without copying them.
func (r *outputRing) since(off int64) (a, b []byte) {
	i := int(max(off, r.kept()) - r.kept())
	head, wrapped := r.buf[r.start:], r.buf[:r.start]
	if i < len(head) {
		return head[i:], wrapped
	}
	return wrapped[i-len(head):], nil
}

// text returns, as a string, the bytes kept from offset from to offset
// to (both clamped to what is kept).
func (r *outputRing) text(from, to int64) string {
	a, b := r.since(from)
	n := int(min(to, r.total) - max(from, r.kept()))
	if n <= 0 {
		return ""
	}
	if n <= len(a) {
		return string(a[:n])
	}
	buf := make([]byte, 0, n)
	return string(append(append(buf, a...), b[:n-len(a)]...))
}

// lastIndexByte is the offset of the last c kept at or after off, or -1.
func (r *outputRing) lastIndexByte(off int64, c byte) int64 {
	a, b := r.since(off)
	if i := bytes.LastIndexByte(b, c); i >= 0 {
		return r.total - int64(len(b)) + int64(i)
	}
	if i := bytes.LastIndexByte(a, c); i >= 0 {
		return r.total - int64(len(b)) - int64(len(a)) + int64(i)
	}
	return -1
}
