// Package imagetest makes images for tests of what bridle accepts in a
// prompt: valid ones, and malformed ones whose header alone looks fine
// (decompression bombs, sizes no provider takes, damaged or cut files).
package imagetest

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
)

// Case is a malformed image and what its refusal must say.
type Case struct {
	Name string
	MIME string
	Data []byte
	// Want is part of the refusal's message.
	Want string
}

// PNG is a valid w×h PNG.
func PNG(w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		img.Set(x, x%h, color.RGBA{R: 200, A: 255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err) // encoding to memory does not fail
	}
	return b.Bytes()
}

// JPEG is a valid w×h JPEG.
func JPEG(w, h int) []byte {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7919 % 251) // detail, so the scan is most of the file
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// ProgressiveJPEG is a valid progressive w×h JPEG of one flat colour
// with comps components (1: gray, 3: YCbCr, 4: CMYK), none subsampled.
// Go's decoder keeps a progressive JPEG's every coefficient until its
// last scan (256 bytes per 8×8 block of each component) on top of the
// image, so this is the JPEG whose whole decode takes the most memory
// for its size. Its scans code a block in a bit or less: even the
// largest is small.
func ProgressiveJPEG(w, h, comps int) []byte {
	var b bytes.Buffer
	segment := func(marker byte, data ...byte) {
		b.Write([]byte{0xff, marker})
		binary.Write(&b, binary.BigEndian, uint16(len(data)+2))
		b.Write(data)
	}
	b.Write([]byte{0xff, 0xd8}) // SOI
	if comps == 4 {
		// Go reads a 4-component JPEG only with Adobe's marker.
		segment(0xee, append([]byte("Adobe"), 0, 100, 0, 0, 0, 0, 0)...)
	}
	segment(0xdb, append([]byte{0}, bytes.Repeat([]byte{1}, 64)...)...) // DQT 0: all ones
	sof := []byte{8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), byte(comps)}
	for i := range comps {
		sof = append(sof, byte(i+1), 0x11, 0)
	}
	segment(0xc2, sof...) // SOF2: progressive
	one := func(symbol byte) []byte {
		return append([]byte{1}, append(make([]byte, 15), symbol)...) // one code of length 1
	}
	segment(0xc4, append([]byte{0x00}, one(0x00)...)...) // DC table 0: difference 0
	segment(0xc4, append([]byte{0x10}, one(0xe0)...)...) // AC table 0: EOBRUN of 2^14 and 14 bits
	blocks := ((w + 7) / 8) * ((h + 7) / 8)
	var bits bitWriter
	// The DC scan, every component interleaved: each block's DC is the
	// one before's (a 0 bit).
	dc := []byte{byte(comps)}
	for i := range comps {
		dc = append(dc, byte(i+1), 0x00)
	}
	segment(0xda, append(dc, 0, 0, 0)...)
	for range blocks * comps {
		bits.put(0, 1)
	}
	b.Write(bits.flush())
	// One AC scan per component: runs of 32767 blocks with no AC
	// coefficient (the last run may pass the end, which ends the scan).
	for i := range comps {
		segment(0xda, 1, byte(i+1), 0x00, 1, 63, 0)
		for n := 0; n < blocks; n += 32767 {
			bits.put(0, 1)
			bits.put(1<<14-1, 14)
		}
		b.Write(bits.flush())
	}
	b.Write([]byte{0xff, 0xd9}) // EOI
	return b.Bytes()
}

// bitWriter writes a JPEG scan's entropy-coded bits, most significant
// first, with a 0 stuffed after every 0xff byte.
type bitWriter struct {
	out  []byte
	acc  uint32
	nacc int
}

func (w *bitWriter) put(v uint32, n int) {
	for i := n - 1; i >= 0; i-- {
		w.acc = w.acc<<1 | v>>i&1
		w.nacc++
		if w.nacc == 8 {
			w.byte()
		}
	}
}

func (w *bitWriter) byte() {
	c := byte(w.acc)
	w.out = append(w.out, c)
	if c == 0xff {
		w.out = append(w.out, 0)
	}
	w.acc, w.nacc = 0, 0
}

// flush pads the last byte with 1 bits and returns the scan's bytes.
func (w *bitWriter) flush() []byte {
	if w.nacc > 0 {
		w.put(1<<(8-w.nacc)-1, 8-w.nacc)
	}
	out := w.out
	w.out = nil
	return out
}

// GIF is a valid GIF of frames w×h frames.
func GIF(w, h, frames int) []byte {
	pal := []color.Color{color.Black, color.White}
	g := &gif.GIF{}
	for range frames {
		g.Image = append(g.Image, image.NewPaletted(image.Rect(0, 0, w, h), pal))
		g.Delay = append(g.Delay, 10)
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, g); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// Malformed returns the malformed images a prompt must refuse, each
// accepted by a check of its header alone.
func Malformed() []Case {
	small := PNG(64, 48)
	jpg := JPEG(64, 48)
	return []Case{
		{"PNG bomb 30000×30000", "image/png", bombPNG(30000, 30000), "30000×30000 pixels, over the 8000 pixels a side"},
		{"PNG bomb 7000×7000", "image/png", bombPNG(7000, 7000), "49.0 megapixels"},
		{"JPEG 65535×65535", "image/jpeg", resizedJPEG(jpg, 65535, 65535), "65535×65535 pixels"},
		{"GIF 65535×65535", "image/gif", resizedGIF(GIF(4, 4, 1), 65535, 65535), "65535×65535 pixels"},
		{"WebP 16384×16384", "image/webp", webpHeader(16384, 16384), "16384×16384 pixels"},
		{"progressive CMYK JPEG 7680×4320", "image/jpeg", ProgressiveJPEG(7680, 4320, 4), "progressive JPEG of 7680×4320 pixels"},
		{"PNG with a bad checksum", "image/png", badCRC(small), "checksum"},
		{"PNG cut short", "image/png", small[:len(small)*2/3], "not a whole PNG"},
		{"JPEG cut short", "image/jpeg", jpg[:len(jpg)*2/3], "not a whole JPEG"},
		{"WebP with no image data", "image/webp", webpHeader(64, 48), "not a whole WEBP"},
		{"animated GIF", "image/gif", GIF(8, 8, 3), "animated"},
	}
}

// bombPNG is a w×h 1-bit PNG of zeros: its file is small, its pixels many.
func bombPNG(w, h int) []byte {
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 1, 0 // 1 bit, grayscale
	chunk(&out, "IHDR", ihdr)
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	row := make([]byte, 1+(w+7)/8)
	for range h {
		zw.Write(row)
	}
	zw.Close()
	chunk(&out, "IDAT", z.Bytes())
	chunk(&out, "IEND", nil)
	return out.Bytes()
}

func chunk(out *bytes.Buffer, typ string, data []byte) {
	binary.Write(out, binary.BigEndian, uint32(len(data)))
	out.WriteString(typ)
	out.Write(data)
	crc := crc32.NewIEEE()
	crc.Write([]byte(typ))
	crc.Write(data)
	binary.Write(out, binary.BigEndian, crc.Sum32())
}

// badCRC flips a bit of a PNG's IDAT checksum.
func badCRC(p []byte) []byte {
	p = bytes.Clone(p)
	i := bytes.Index(p, []byte("IDAT"))
	n := binary.BigEndian.Uint32(p[i-4:])
	p[i+4+int(n)] ^= 1
	return p
}

// resizedJPEG rewrites the size in a JPEG's frame header (SOF0).
func resizedJPEG(j []byte, w, h int) []byte {
	j = bytes.Clone(j)
	i := bytes.Index(j, []byte{0xff, 0xc0})
	binary.BigEndian.PutUint16(j[i+5:], uint16(h))
	binary.BigEndian.PutUint16(j[i+7:], uint16(w))
	return j
}

// resizedGIF rewrites the size in a GIF's screen descriptor.
func resizedGIF(g []byte, w, h int) []byte {
	g = bytes.Clone(g)
	binary.LittleEndian.PutUint16(g[6:], uint16(w))
	binary.LittleEndian.PutUint16(g[8:], uint16(h))
	return g
}

// webpHeader is a lossless WebP's header for w×h with no image data.
func webpHeader(w, h int) []byte {
	bits := uint32(w-1) | uint32(h-1)<<14
	vp8l := []byte{0x2f, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(vp8l[1:], bits)
	var b bytes.Buffer
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, uint32(4+8+len(vp8l)+1))
	b.WriteString("WEBPVP8L")
	binary.Write(&b, binary.LittleEndian, uint32(len(vp8l)))
	b.Write(vp8l)
	b.WriteByte(0) // padding to an even size
	return b.Bytes()
}
