package session

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/internal/imagetest"
	"github.com/bridle-dev/bridle/provider"
	"github.com/bridle-dev/bridle/provider/scripted"
)

func TestImageNames(t *testing.T) {
	a, b := strings.Repeat("a", 64), strings.Repeat("0b", 32)
	for _, c := range []struct {
		payload string
		want    []string
	}{
		{`{"content":[{"type":"text","text":"hi"}]}`, nil},
		{`{"content":[{"type":"image","uri":"image:sha256:` + a + `"}]}`, []string{a}},
		{`{"content":[{"uri":"image:sha256:` + b + `"},{"uri":"image:sha256:` + a + `"},{"uri":"image:sha256:` + b + `"}]}`, []string{b, a}},
		// Not a digest: too short, too long, upper case.
		{`{"uri":"image:sha256:abc"}`, nil},
		{`{"uri":"image:sha256:` + a + `a"}`, nil},
		{`{"uri":"image:sha256:` + strings.ToUpper(a) + `"}`, nil},
		{`image:sha256:`, nil},
	} {
		if got := imageNames([]byte(c.payload)); !slices.Equal(got, c.want) {
			t.Errorf("imageNames(%.60s…) = %v, want %v", c.payload, got, c.want)
		}
	}
}

// newImageManager is a manager whose model reads images and answers
// every prompt "seen", with a data directory to store them in.
func newImageManager(t *testing.T) *Manager {
	t.Helper()
	st := testStore(t)
	win, err := contextwin.New(config.Context{}, func(string) config.ModelSpec {
		return config.ModelSpec{Window: 100_000, MaxOutput: 1_000, Tokenizer: "o200k_base", Images: true}
	})
	if err != nil {
		t.Fatal(err)
	}
	p := scripted.New(&scripted.Scenario{Turns: []scripted.Turn{{Calls: []scripted.Call{{Text: scripted.Chunks{"seen"}}}}}})
	m := NewManager(Config{
		Store: st, Client: &recorder{}, DataDir: t.TempDir(), Window: win,
		DefaultModel: func(string) string { return "scripted/test" },
		OpenModel:    func(context.Context, string, string) (provider.Provider, error) { return p, nil },
	})
	t.Cleanup(m.Shutdown)
	return m
}

// imagePrompt is a prompt of some text and a PNG of w×h pixels.
func imagePrompt(w, h int) []event.Content {
	return []event.Content{
		{Type: "text", Text: "look"},
		{Type: "image", MimeType: "image/png", Data: base64.StdEncoding.EncodeToString(imagetest.PNG(w, h))},
	}
}

// TestACancelledPromptDoesNotWaitForAnotherDecode: a prompt whose image
// waits while another prompt's image is decoded (one at a time, up to
// 1.7 s each) ends as soon as it is cancelled, as cancelled, with nothing
// logged.
func TestACancelledPromptDoesNotWaitForAnotherDecode(t *testing.T) {
	ctx := context.Background()
	m := newImageManager(t)
	s := openSession(t, m, t.TempDir(), "")
	m.decoding <- struct{}{} // another prompt's image is being decoded
	run, err := s.Start(ctx, imagePrompt(64, 48))
	if err != nil {
		t.Fatal(err)
	}
	s.Cancel()
	ended := make(chan struct{})
	var stop StopReason
	go func() {
		stop, err = run.Wait()
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		<-m.decoding
		t.Fatal("the cancelled prompt still waits for the other prompt's decode after 10 s")
	}
	<-m.decoding
	if stop != StopCancelled || err != nil {
		t.Errorf("the cancelled prompt ended %q, %v; want cancelled", stop, err)
	}
	for _, e := range s.Events() {
		if e.Payload.Kind() == event.KindUserMessage {
			t.Errorf("the cancelled prompt was logged")
		}
	}
	// Once the other decode is done, the same prompt goes through.
	if stop, err := s.Prompt(ctx, imagePrompt(64, 48)); stop != StopEndTurn || err != nil {
		t.Errorf("the prompt after the decode: %q, %v", stop, err)
	}
}

// TestAnImageSentAsADeleteRemovesItIsKept: a delete has found that no
// log refers to an image any more and is about to remove it, when a
// prompt of another session sends the same image. The prompt's image is
// not lost: in one process the prompt's store, commit and store again
// and the delete's scan and remove do not interleave.
func TestAnImageSentAsADeleteRemovesItIsKept(t *testing.T) {
	ctx := context.Background()
	m := newImageManager(t)
	cwd := t.TempDir()
	gone, kept := openSession(t, m, cwd, ""), openSession(t, m, cwd, "")
	if stop, err := gone.Prompt(ctx, imagePrompt(30, 20)); stop != StopEndTurn || err != nil {
		t.Fatalf("the first prompt: %q, %v", stop, err)
	}
	images := filepath.Join(m.cfg.DataDir, "images")
	stored, _ := os.ReadDir(images)
	if len(stored) != 1 {
		t.Fatalf("%d images stored, want 1", len(stored))
	}
	name := stored[0].Name()

	waiting, sent := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var stop StopReason
	var perr error
	m.testHook = func(point string) {
		switch point {
		case "images wait":
			once.Do(func() { close(waiting) })
		case "images scanned":
			// No log refers to the image now: the other session sends
			// it. The delete goes on once that prompt is logged, or
			// waits for the delete.
			go func() {
				defer close(sent)
				stop, perr = kept.Prompt(ctx, imagePrompt(30, 20))
			}()
			select {
			case <-waiting:
			case <-sent:
			}
		}
	}
	if err := m.Delete(ctx, gone.ID()); err != nil {
		t.Fatal(err)
	}
	<-sent
	if stop != StopEndTurn || perr != nil {
		t.Fatalf("the prompt sent during the delete: %q, %v", stop, perr)
	}
	refers := false
	for _, e := range kept.Events() {
		if u, ok := e.Payload.(event.UserMessage); ok && len(u.Content) == 2 && u.Content[1].URI == imageURIPrefix+name {
			refers = true
		}
	}
	if !refers {
		t.Fatalf("the prompt's log does not refer to the image %s", name)
	}
	if _, err := os.Stat(filepath.Join(images, name)); err != nil {
		t.Errorf("the image the kept session's log refers to is gone: %v", err)
	}
}
