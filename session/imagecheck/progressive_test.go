package imagecheck

import (
	"bytes"
	"encoding/base64"
	"image"
	_ "image/jpeg"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/imagetest"
)

// TestProgressiveJPEGsAreBounded: a progressive JPEG is taken up to 4K
// UHD (MaxProgressivePixels), whatever its components; a baseline one up
// to MaxPixels.
func TestProgressiveJPEGsAreBounded(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
		want string // "" when taken
	}{
		{"progressive CMYK 3840×2160", imagetest.ProgressiveJPEG(3840, 2160, 4), ""},
		{"progressive gray 2160×3840", imagetest.ProgressiveJPEG(2160, 3840, 1), ""},
		{"progressive YCbCr 3841×2160", imagetest.ProgressiveJPEG(3841, 2160, 3), "progressive JPEG of 3841×2160 pixels, 8.3 megapixels, over the 8.3"},
		{"progressive CMYK 7680×4320", imagetest.ProgressiveJPEG(7680, 4320, 4), "progressive JPEG of 7680×4320"},
		{"baseline 4000×2200", imagetest.JPEG(4000, 2200), ""},
	} {
		img, err := Read("image/jpeg", base64.StdEncoding.EncodeToString(c.data))
		if err == nil {
			err = img.Decode()
		}
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want it taken", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// TestProgressiveFindsTheFrameTheDecoderReads: the marker walk skips
// what Go's decoder skips (segments, fill bytes, stray bytes between
// segments), so it reads the frame header the decoder reads.
func TestProgressiveFindsTheFrameTheDecoderReads(t *testing.T) {
	prog := imagetest.ProgressiveJPEG(64, 48, 3)
	base := imagetest.JPEG(64, 48)
	sof := func(j []byte) int {
		if i := bytes.Index(j, []byte{0xff, 0xc2}); i >= 0 {
			return i
		}
		return bytes.Index(j, []byte{0xff, 0xc0})
	}
	insert := func(j []byte, extra ...byte) []byte {
		i := sof(j)
		return append(append(append([]byte(nil), j[:i]...), extra...), j[i:]...)
	}
	// A comment segment holding what looks like a progressive frame
	// header: skipped by its length.
	comment := append([]byte{0xff, 0xfe, 0, 6}, 0xff, 0xc2, 0, 0)
	for _, c := range []struct {
		name string
		data []byte
		want bool
	}{
		{"progressive", prog, true},
		{"baseline", base, false},
		{"progressive, fill bytes before its frame", insert(prog, 0xff, 0xff, 0xff), true},
		{"progressive, stray bytes before its frame", insert(prog, 1, 2, 3), true},
		{"progressive, 0xff 0x00 before its frame", insert(prog, 0xff, 0x00), true},
		{"baseline, a comment holding 0xff 0xc2", insert(base, comment...), false},
		{"progressive, a comment before its frame", insert(prog, comment...), true},
	} {
		if _, _, err := image.DecodeConfig(bytes.NewReader(c.data)); err != nil {
			t.Fatalf("%s: the decoder reads no header: %v", c.name, err)
		}
		if got := progressive(c.data); got != c.want {
			t.Errorf("%s: progressive = %v, want %v", c.name, got, c.want)
		}
	}
}
