// Package imagecheck holds a prompt's image to what every provider takes.
// An image is sent again with every later request of its session, so one
// a provider refuses would fail every later turn: it is checked whole
// before it is stored. Its header must say a size the providers take
// (Read), and the whole file must decode (Image.Decode: every PNG chunk's
// checksum, no truncation). The caller decodes one image at a time, so
// the decode's memory is bounded by the size limits.
package imagecheck

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/gif"
	_ "image/jpeg" // image.DecodeConfig and image.Decode read these formats
	_ "image/png"
	"io"
	"strings"

	_ "golang.org/x/image/webp"
)

// MaxBytes bounds one image, the smallest of the providers' limits
// (Anthropic's 5 MB).
const MaxBytes = 5 << 20

// MaxSide bounds an image's width and height: Anthropic refuses an
// image over 8000 pixels on a side (OpenAI publishes no bound, and
// scales images down to fit 2048×2048).
const MaxSide = 8000

// MaxPixels bounds an image's area, an 8K UHD frame (33.2
// megapixels): more than any model reads (Claude scales an image to a
// long edge of 1568, OpenAI to 2048×2048), and it bounds the memory
// checking one takes: decoding the largest whole takes 253 MB (a
// 16-bit PNG, or a CMYK JPEG).
const MaxPixels = 7680 * 4320

// MaxProgressivePixels bounds a progressive JPEG's area, a 4K UHD frame
// (8.3 megapixels). Go's decoder keeps such a file's every coefficient
// until its last scan, 256 bytes per 8×8 block of each component, on
// top of the image: at 33.2 megapixels that took 474 MB (YCbCr, none
// subsampled) and 759 MB (CMYK), measured. At this bound the worst, a
// CMYK one, takes 189 MB, less than the PNG above.
const MaxProgressivePixels = 3840 * 2160

// formats are the formats a prompt's image may have, by MIME type, as
// image.DecodeConfig names them.
var formats = map[string]string{"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}

// Image is a prompt's image whose header passed the checks.
type Image struct {
	Data   []byte
	Config image.Config
	// Format is as image.DecodeConfig names it: png, jpeg, gif, webp.
	Format string
}

// Read checks a prompt's image (base64 data of a MIME type) as far as
// its header: a format providers take, the one the MIME type says, and
// sizes within the bounds. Decode checks the rest.
func Read(mime, b64 string) (Image, error) {
	format, ok := formats[mime]
	if !ok {
		return Image{}, fmt.Errorf("an image of type %q cannot be sent: use PNG, JPEG, GIF or WebP", mime)
	}
	if base64.StdEncoding.DecodedLen(len(b64)) > MaxBytes+3 {
		return Image{}, fmt.Errorf("the image is over %d MB: send a smaller one", MaxBytes>>20)
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return Image{}, fmt.Errorf("the image's data is not base64: %v", err)
	}
	if len(data) > MaxBytes {
		return Image{}, fmt.Errorf("the image is %d bytes, over the %d MB limit: send a smaller one", len(data), MaxBytes>>20)
	}
	name := strings.ToUpper(format)
	cfg, got, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return Image{}, fmt.Errorf("the image is not a readable %s (%v): export it again as %s, or as PNG", name, err, name)
	}
	if got != format {
		return Image{}, fmt.Errorf("the image says it is %s but is %s: send it as image/%s", mime, strings.ToUpper(got), got)
	}
	if err := checkSize(cfg); err != nil {
		return Image{}, err
	}
	if w, h := cfg.Width, cfg.Height; format == "jpeg" && w*h > MaxProgressivePixels && progressive(data) {
		return Image{}, fmt.Errorf("the image is a progressive JPEG of %d×%d pixels, %.1f megapixels, over the %.1f megapixels bridle takes in a progressive JPEG (checking one takes four times the memory of a baseline one): resize it (a long edge of 1568 pixels is what Claude reads), or save it as a baseline JPEG or a PNG, and send it again", w, h, float64(w*h)/1e6, float64(MaxProgressivePixels)/1e6)
	}
	return Image{Data: data, Config: cfg, Format: format}, nil
}

// progressive says whether a JPEG's frame header is progressive (SOF2).
// It walks the markers as Go's decoder does (bytes between segments
// skipped, fill bytes, restart markers), so that it finds the frame
// header the decoder would use: a JPEG has one.
func progressive(data []byte) bool {
	for i := 2; i+1 < len(data); {
		if data[i] != 0xff {
			i++ // extraneous data, which the decoder skips too
			continue
		}
		m := data[i+1]
		switch {
		case m == 0xff, m == 0x00:
			i++ // a fill byte; or 0xff 0x00, extraneous data
			continue
		case m == 0xc2:
			return true
		case m == 0xc0 || m == 0xc1 || m == 0xd9:
			return false // baseline or extended sequential; or the end
		case m >= 0xd0 && m <= 0xd7:
			i += 2 // a restart marker: no length
			continue
		}
		if i+3 >= len(data) {
			return false
		}
		i += 2 + (int(data[i+2])<<8 | int(data[i+3]))
	}
	return false
}

// checkSize holds an image's header to the size bounds.
func checkSize(cfg image.Config) error {
	w, h := cfg.Width, cfg.Height
	switch {
	case w < 1 || h < 1:
		return fmt.Errorf("the image is %d×%d pixels, which is empty: export it again", w, h)
	case w > MaxSide || h > MaxSide:
		return fmt.Errorf("the image is %d×%d pixels, over the %d pixels a side providers take: resize it (a long edge of 1568 pixels is what Claude reads) and send it again", w, h, MaxSide)
	case w*h > MaxPixels:
		return fmt.Errorf("the image is %d×%d pixels, %.1f megapixels, over the %.1f megapixels bridle takes: resize it (a long edge of 1568 pixels is what Claude reads) and send it again", w, h, float64(w*h)/1e6, float64(MaxPixels)/1e6)
	}
	return nil
}

// Decode decodes the whole image, so that a damaged or truncated file is
// refused here rather than by the provider. Its memory is bounded by the
// size limits; decoding several at once takes that many times as much.
func (img Image) Decode() error {
	format, data := img.Format, img.Data
	name := strings.ToUpper(format)
	damaged := func(err error) error {
		return fmt.Errorf("the image is not a whole %s: %v; it is damaged or cut short: export it again and send it again", name, err)
	}
	if format == "gif" {
		return checkGIF(data, damaged)
	}
	if _, _, err := image.Decode(bytes.NewReader(data)); err != nil {
		return damaged(err)
	}
	return nil
}

// checkGIF decodes a GIF's first frame and reads the blocks after it: an
// animated GIF is refused (OpenAI takes none, and decoding every frame
// would take memory a frame's size times their number).
func checkGIF(data []byte, damaged func(error) error) error {
	r := bytes.NewReader(data)
	// gif.Decode stops after the first frame; a bytes.Reader is read no
	// further than it needs.
	if _, err := gif.Decode(r); err != nil {
		return damaged(err)
	}
	for {
		b, err := r.ReadByte()
		if err != nil {
			return damaged(errors.New("no trailer after the image"))
		}
		switch b {
		case 0x3b: // trailer
			return nil
		case 0x2c: // another image descriptor
			return fmt.Errorf("the GIF is animated: send a single frame (as PNG); models read one still image")
		case 0x21: // extension: a label, then sub-blocks up to an empty one
			if _, err := r.ReadByte(); err != nil {
				return damaged(io.ErrUnexpectedEOF)
			}
			for {
				n, err := r.ReadByte()
				if err != nil {
					return damaged(io.ErrUnexpectedEOF)
				}
				if n == 0 {
					break
				}
				if int(n) > r.Len() {
					return damaged(io.ErrUnexpectedEOF)
				}
				r.Seek(int64(n), io.SeekCurrent)
			}
		default:
			return damaged(fmt.Errorf("unknown block 0x%02x", b))
		}
	}
}
