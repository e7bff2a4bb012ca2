package imagecheck

import (
	"encoding/base64"
	"image"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/imagetest"
)

func TestMalformedImagesAreRefused(t *testing.T) {
	check := func(mime string, data []byte) (Image, error) {
		img, err := Read(mime, base64.StdEncoding.EncodeToString(data))
		if err != nil {
			return Image{}, err
		}
		return img, img.Decode()
	}
	for _, c := range imagetest.Malformed() {
		_, err := check(c.MIME, c.Data)
		if err == nil || !strings.Contains(err.Error(), c.Want) {
			t.Errorf("%s: %v, want an error saying %q", c.Name, err, c.Want)
		}
	}
	for _, c := range []struct {
		mime string
		data []byte
	}{
		{"image/png", imagetest.PNG(64, 48)},
		{"image/jpeg", imagetest.JPEG(64, 48)},
		{"image/gif", imagetest.GIF(8, 8, 1)},
	} {
		img, err := check(c.mime, c.data)
		if err != nil || len(img.Data) != len(c.data) || img.Config.Width == 0 {
			t.Errorf("a valid %s: %v", c.mime, err)
		}
	}
}

func TestImageSizeBounds(t *testing.T) {
	for _, c := range []struct {
		w, h int
		ok   bool
	}{
		{1, 1, true},
		{8000, 4000, true},
		{7680, 4320, true},
		{7681, 4320, false},
		{8001, 1, false},
		{1, 8001, false},
		{8000, 8000, false},
		{0, 10, false},
	} {
		err := checkSize(image.Config{Width: c.w, Height: c.h})
		if (err == nil) != c.ok {
			t.Errorf("%d×%d: %v, want accepted %v", c.w, c.h, err, c.ok)
		}
	}
}
