package session

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/session/checkpoint"
	"github.com/bridle-dev/bridle/session/imagecheck"
	"github.com/bridle-dev/bridle/store"
)

// Images in prompts are stored once, by their content, in the data
// directory (images/HEX, HEX the sha256 of the bytes), and the log's
// user_message refers to them ("image:sha256:HEX"): a long session does not
// carry an image in every event, and the same image sent twice is one
// file. The bytes are loaded into a request only when it is sent. An
// image goes with the last session whose log refers to it.

const imageURIPrefix = "image:sha256:"

// imageRefs finds the log's references to stored images.
var imageRefs = store.RefQuery{Kind: string(event.KindUserMessage), Contains: imageURIPrefix, Names: imageNames}

// imageNames returns the stored images a user_message's payload refers
// to, in order, each once. It looks for the URIs in the payload's bytes
// rather than decoding it: a delete reads every prompt that holds an
// image, in every session, and the text around the URIs may be long.
func imageNames(payload []byte) []string {
	var out []string
	p := payload
	for {
		i := bytes.Index(p, []byte(imageURIPrefix))
		if i < 0 {
			return out
		}
		p = p[i+len(imageURIPrefix):]
		n := 0
		for n < len(p) && (p[n] >= '0' && p[n] <= '9' || p[n] >= 'a' && p[n] <= 'f') {
			n++
		}
		if name := string(p[:n]); checkpoint.IsDigest(name) && !slices.Contains(out, name) {
			out = append(out, name)
		}
		p = p[n:]
	}
}

// checkedImage is a prompt's image once checked: stored (under name)
// just before the prompt is logged.
type checkedImage struct {
	name string
	data []byte
}

// checkImages checks a prompt's images (package imagecheck) and returns the
// content with each image referring to the copy storeImages will keep.
// Nothing is stored: a prompt refused for any of its images, or for its
// size, leaves nothing behind.
func (s *Session) checkImages(ctx context.Context, content []event.Content, spec string) ([]event.Content, []checkedImage, error) {
	var out []event.Content
	var images []checkedImage
	for i, c := range content {
		if c.Type != "image" {
			continue
		}
		if out == nil {
			out = append([]event.Content(nil), content...)
		}
		ref, img, err := s.checkImage(ctx, c, spec)
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%w: prompt[%d]: %v", ErrInvalid, i, err)
		}
		out[i] = ref
		images = append(images, img)
	}
	if out == nil {
		return content, nil, nil
	}
	return out, images, nil
}

func (s *Session) checkImage(ctx context.Context, c event.Content, spec string) (event.Content, checkedImage, error) {
	if m := s.m.window(s.Info().Cwd).Model(spec); !m.Images {
		return c, checkedImage{}, fmt.Errorf("the model %s takes no images: describe the image in words, or switch to a model that reads images (models.%q.images in settings says a model does)", spec, spec)
	}
	if s.imageDir() == "" {
		return c, checkedImage{}, fmt.Errorf("images need bridle's data directory, and this session has none")
	}
	img, err := s.m.decodeImage(ctx, c.MimeType, c.Data)
	if err != nil {
		return c, checkedImage{}, err
	}
	sum := sha256.Sum256(img.Data)
	name := hex.EncodeToString(sum[:])
	ref := event.Content{Type: "image", MimeType: c.MimeType, URI: imageURIPrefix + name, Width: img.Config.Width, Height: img.Config.Height, Size: len(img.Data)}
	return ref, checkedImage{name: name, data: img.Data}, nil
}

// decodeImage checks a prompt's image (base64 data of a MIME type) and
// returns it. It decodes one image whole at a time in this process: the
// memory a decode takes is bounded by imagecheck's limits, not their
// multiple. A prompt cancelled while another's image is decoded (up to
// 1.7 s each) stops waiting at once.
func (m *Manager) decodeImage(ctx context.Context, mime, b64 string) (imagecheck.Image, error) {
	img, err := imagecheck.Read(mime, b64)
	if err != nil {
		return imagecheck.Image{}, err
	}
	select {
	case m.decoding <- struct{}{}:
	case <-ctx.Done():
		return imagecheck.Image{}, ctx.Err()
	}
	err = img.Decode()
	<-m.decoding
	if err != nil {
		return imagecheck.Image{}, err
	}
	return img, nil
}

// logPrompt commits a prompt's user_message with its images stored:
// before, so the log never refers to an image that was not stored, and
// again after, for a delete in another process that removed one
// meanwhile. In this process, a delete's scan and removal of images
// waits while a prompt holding images is logged, and the reverse
// (Manager.images).
func (s *Session) logPrompt(ctx context.Context, images []checkedImage, msg event.UserMessage) error {
	if len(images) > 0 {
		s.m.hook("images wait")
		s.m.images.Lock()
		defer s.m.images.Unlock()
	}
	if err := s.storeImages(images); err != nil {
		return err
	}
	if _, err := s.commit(ctx, typed, msg); err != nil {
		return err
	}
	if err := s.storeImages(images); err != nil {
		s.m.log.Warn("a prompt's image could not be stored again", "session", s.row.ID, "err", err)
	}
	return nil
}

// storeImages writes checked images that are not stored yet.
func (s *Session) storeImages(images []checkedImage) error {
	for _, img := range images {
		if _, err := checkpoint.StoreBlob(s.imageDir(), img.name, img.data); err != nil {
			return fmt.Errorf("store the prompt's image in %s: %w", s.imageDir(), err)
		}
	}
	return nil
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
	if !ok || !checkpoint.IsDigest(name) {
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
// An image that can no longer be read (removed with another session that
// shared it, or by hand) becomes a note saying so: failing the request
// would fail every later turn of the session.
func (s *Session) withImages(req provider.Request) provider.Request {
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
				s.m.log.Warn("a prompt's image is sent as a note: it cannot be read", "session", s.row.ID, "err", err)
				msgs[i].Parts[j] = provider.Part{Kind: provider.PartText, Text: missingImageNote}
				continue
			}
			msgs[i].Parts[j].Data = data
		}
	}
	if msgs != nil {
		req.Messages = msgs
	}
	return req
}

// missingImageNote stands for an image that is no longer stored.
const missingImageNote = "[An image the user sent here is no longer stored and cannot be shown.]"
