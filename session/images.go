package session

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"image"
	_ "image/gif" // image.DecodeConfig reads these formats
	_ "image/jpeg"
	_ "image/png"
	"os"
	"path/filepath"
	"strings"

	_ "golang.org/x/image/webp"

	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/session/event"
)

// Images in prompts are stored once, by their content, in the data
// directory (images/HEX, HEX the sha256 of the bytes), and the log's
// user_message refers to them ("image:sha256:HEX"): a long session does not
// carry an image in every event, and the same image sent twice is one
// file. The bytes are loaded into a request only when it is sent.

// MaxImageBytes bounds one image, the smallest of the providers' limits
// (Anthropic's 5 MB).
const MaxImageBytes = 5 << 20

// imageFormats are the formats a prompt's image may have, by MIME type,
// as image.DecodeConfig names them.
var imageFormats = map[string]string{"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}

const imageURIPrefix = "image:sha256:"

// storeImages checks a prompt's images, stores them, and returns the
// content with each image referring to its stored copy.
func (s *Session) storeImages(content []event.Content, spec string) ([]event.Content, error) {
	var out []event.Content
	for i, c := range content {
		if c.Type != "image" {
			continue
		}
		if out == nil {
			out = append([]event.Content(nil), content...)
		}
		stored, err := s.storeImage(c, spec)
		if err != nil {
			return nil, fmt.Errorf("%w: prompt[%d]: %v", ErrInvalid, i, err)
		}
		out[i] = stored
	}
	if out == nil {
		return content, nil
	}
	return out, nil
}

func (s *Session) storeImage(c event.Content, spec string) (event.Content, error) {
	if m := s.m.window(s.Info().Cwd).Model(spec); !m.Images {
		return c, fmt.Errorf("the model %s takes no images: describe the image in words, or switch to a model that reads images (models.%q.images in settings says a model does)", spec, spec)
	}
	format, ok := imageFormats[c.MimeType]
	if !ok {
		return c, fmt.Errorf("an image of type %q cannot be sent: use PNG, JPEG, GIF or WebP", c.MimeType)
	}
	if base64.StdEncoding.DecodedLen(len(c.Data)) > MaxImageBytes+3 {
		return c, fmt.Errorf("the image is over %d MB: send a smaller one", MaxImageBytes>>20)
	}
	data, err := base64.StdEncoding.DecodeString(c.Data)
	if err != nil {
		return c, fmt.Errorf("the image's data is not base64: %v", err)
	}
	if len(data) > MaxImageBytes {
		return c, fmt.Errorf("the image is %d bytes, over the %d MB limit: send a smaller one", len(data), MaxImageBytes>>20)
	}
	cfg, got, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return c, fmt.Errorf("the image is not a readable %s: %v", strings.ToUpper(format), err)
	}
	if got != format {
		return c, fmt.Errorf("the image says it is %s but is %s", c.MimeType, strings.ToUpper(got))
	}
	dir := s.imageDir()
	if dir == "" {
		return c, fmt.Errorf("images need bridle's data directory, and this session has none")
	}
	sum := sha256.Sum256(data)
	name := hex.EncodeToString(sum[:])
	if _, err := storeBlob(dir, name, data); err != nil {
		return c, fmt.Errorf("store the image: %v", err)
	}
	return event.Content{Type: "image", MimeType: c.MimeType, URI: imageURIPrefix + name, Width: cfg.Width, Height: cfg.Height, Size: len(data)}, nil
}

func (s *Session) imageDir() string {
	if s.m.cfg.DataDir == "" {
		return ""
	}
	return filepath.Join(s.m.cfg.DataDir, "images")
}

// loadImage reads a stored image by its URI.
func (s *Session) loadImage(uri string) ([]byte, error) {
	name, ok := strings.CutPrefix(uri, imageURIPrefix)
	if !ok || !isDigest(name) {
		return nil, fmt.Errorf("%q names no stored image", uri)
	}
	dir := s.imageDir()
	if dir == "" {
		return nil, fmt.Errorf("no data directory holds %s", uri)
	}
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, fmt.Errorf("the image %s is gone from %s: %w", uri, dir, err)
	}
	return data, nil
}

// withImages returns req with every image part's bytes loaded. The parts
// are the Memo's: messages holding an image are copied, never changed.
func (s *Session) withImages(req provider.Request) (provider.Request, error) {
	var msgs []provider.Message
	for i, m := range req.Messages {
		for j, p := range m.Parts {
			if p.Kind != provider.PartImage || p.Data != nil {
				continue
			}
			if msgs == nil {
				msgs = append([]provider.Message(nil), req.Messages...)
			}
			if &msgs[i].Parts[0] == &m.Parts[0] {
				msgs[i].Parts = append([]provider.Part(nil), m.Parts...)
			}
			data, err := s.loadImage(p.Ref)
			if err != nil {
				return req, err
			}
			msgs[i].Parts[j].Data = data
		}
	}
	if msgs != nil {
		req.Messages = msgs
	}
	return req, nil
}
