package redact

import (
	"bytes"
	"io"
)

// maxHeld bounds what a Writer holds back while it waits for the end of a
// line or of a key block; past it the text is redacted as it is.
const maxHeld = 64 * 1024

// Writer redacts a stream line by line before passing it on, holding back
// a private key block until its end so that the block is redacted whole.
type Writer struct {
	r       *Redactor
	w       io.Writer
	buf     []byte
	inBlock bool
}

// NewWriter returns a writer that redacts what it passes on to w.
func NewWriter(r *Redactor, w io.Writer) *Writer { return &Writer{r: r, w: w} }

// Write implements io.Writer. It always consumes all of p.
func (w *Writer) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		end := w.cut()
		if end < 0 {
			return len(p), nil
		}
		chunk := w.buf[:end]
		if _, err := io.WriteString(w.w, w.redact(chunk)); err != nil {
			return len(p), err
		}
		w.buf = append(w.buf[:0], w.buf[end:]...)
	}
}

// cut returns how much of buf can be redacted and passed on now, or -1.
func (w *Writer) cut() int {
	if len(w.buf) == 0 {
		return -1
	}
	if w.inBlock || bytes.Contains(w.buf, []byte("PRIVATE KEY-----")) && bytes.Contains(w.buf, []byte("-----BEGIN")) {
		// Hold the block until its end line is complete.
		if i := bytes.Index(w.buf, []byte("-----END")); i >= 0 {
			if j := bytes.IndexByte(w.buf[i:], '\n'); j >= 0 {
				w.inBlock = false
				return i + j + 1
			}
		}
		if len(w.buf) >= maxHeld {
			w.inBlock = true
			return len(w.buf)
		}
		if !w.inBlock {
			// Pass on the complete lines before the block.
			if i := bytes.Index(w.buf, []byte("-----BEGIN")); i > 0 {
				if j := bytes.LastIndexByte(w.buf[:i], '\n'); j >= 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	if i := bytes.LastIndexByte(w.buf, '\n'); i >= 0 {
		return i + 1
	}
	if len(w.buf) >= maxHeld {
		return len(w.buf)
	}
	return -1
}

func (w *Writer) redact(chunk []byte) string {
	if w.inBlock {
		return "[REDACTED:private-key]\n"
	}
	return w.r.Redact(string(chunk))
}

// Close redacts and passes on what is still held.
func (w *Writer) Close() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := io.WriteString(w.w, w.redact(w.buf))
	w.buf = nil
	return err
}
