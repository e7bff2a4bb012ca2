package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/color"
	"image/gif"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/internal/acptest"
	"github.com/bridle-dev/bridle/internal/imagetest"
)

// pngOf is a w×h PNG, base64-encoded as ACP carries it.
func pngOf(w, h int) string {
	return base64.StdEncoding.EncodeToString(imagetest.PNG(w, h))
}

func imagePrompt(sid, text, mime, data string) map[string]any {
	return map[string]any{"sessionId": sid, "prompt": []any{
		map[string]string{"type": "text", "text": text},
		map[string]string{"type": "image", "mimeType": mime, "data": data},
	}}
}

// TestImagesInPrompts: an image goes to a model that reads images, is
// stored once outside the log, counted by its size, and shown again on
// load; a model that takes none, a mislabelled image and an unknown type
// are refused with errors that say so.
func TestImagesInPrompts(t *testing.T) {
	scenario := `{"model": {"images": true}, "turns": [{"calls": [{"text": "A red line."}]}, {"calls": [{"text": "Still red."}]}]}`
	requests := filepath.Join(t.TempDir(), "requests.jsonl")
	ws := acptest.Workspace(t, map[string]string{"a.txt": "a\n"})
	a := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario), Env: []string{"BRIDLE_RECORD_REQUESTS=" + requests}})
	init := a.Initialize()
	if !strings.Contains(string(init), `"image":true`) {
		t.Fatalf("initialize does not offer images: %s", init)
	}
	sid := a.NewSession(ws)
	data := pngOf(64, 48)
	for _, text := range []string{"what is this?", "and now?"} {
		var resp struct{ StopReason string }
		a.MustCall("session/prompt", imagePrompt(sid, text, "image/png", data), &resp)
		if resp.StopReason != "end_turn" {
			t.Fatalf("stopReason = %q", resp.StopReason)
		}
	}

	// The model got the image's bytes.
	raw, _ := os.ReadFile(requests)
	if !strings.Contains(string(raw), `"kind":"image"`) || !strings.Contains(string(raw), `"data":"`+data+`"`) {
		t.Fatalf("no request carried the image")
	}
	// The log refers to one stored copy, and counts it by the formula
	// (64×48 is one 512-pixel tile: 85 + 170 tokens).
	stored, _ := os.ReadDir(filepath.Join(filepath.Dir(a.DB), "images"))
	if len(stored) != 1 {
		t.Fatalf("%d stored images for one image sent twice, want 1", len(stored))
	}
	prompts := 0
	for _, e := range acptest.Log(t, a.DB, sid) {
		if e["kind"] != "user_message" {
			continue
		}
		prompts++
		b, _ := json.Marshal(e)
		if strings.Contains(string(b), data[:40]) || !strings.Contains(string(b), `"uri":"image:sha256:`+stored[0].Name()+`"`) {
			t.Errorf("the log holds the image, or no reference to it: %.300s", b)
		}
		if tokens, _ := e["tokens"].(float64); tokens < 255 {
			t.Errorf("a prompt with an image counted %v tokens, want at least the image's 255", tokens)
		}
	}
	if prompts != 2 {
		t.Fatalf("%d prompts logged", prompts)
	}
	// session/load shows the image again.
	before := len(a.Updates(sid))
	a.MustCall("session/load", map[string]any{"sessionId": sid, "cwd": ws, "mcpServers": []any{}}, nil)
	shown := 0
	for _, u := range a.Updates(sid)[before:] {
		if c, _ := u.Fields["content"].(map[string]any); u.Kind == "user_message_chunk" && c["type"] == "image" && c["data"] == data {
			shown++
		}
	}
	if shown != 2 {
		t.Errorf("session/load showed the image %d times, want 2", shown)
	}

	var g bytes.Buffer
	gif.Encode(&g, image.NewPaletted(image.Rect(0, 0, 4, 4), []color.Color{color.Black}), nil)
	for _, bad := range []struct{ mime, data, want string }{
		{"image/png", base64.StdEncoding.EncodeToString(g.Bytes()), "says it is image/png but is GIF"},
		{"image/tiff", data, `"image/tiff" cannot be sent: use PNG, JPEG, GIF or WebP`},
		{"image/png", "not base64!", "not base64"},
	} {
		_, err := a.Call("session/prompt", imagePrompt(sid, "look", bad.mime, bad.data))
		if err == nil || err.Code != -32602 || !strings.Contains(err.Message, bad.want) {
			t.Errorf("a %s prompt: %v, want -32602 saying %q", bad.mime, err, bad.want)
		}
	}
	a.CloseStdin()
	a.AssertValid(t)

	// A model that reads no images refuses them before anything is logged.
	b := acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, `{"turns": [{"calls": [{"text": "?"}]}]}`)})
	b.Initialize()
	sid = b.NewSession(ws)
	_, err := b.Call("session/prompt", imagePrompt(sid, "what is this?", "image/png", data))
	if err == nil || err.Code != -32602 || !strings.Contains(err.Message, "takes no images") {
		t.Fatalf("an image for a model without images: %v", err)
	}
	for _, e := range acptest.Log(t, b.DB, sid) {
		if e["kind"] == "user_message" {
			t.Fatalf("the refused prompt was logged")
		}
	}
	b.CloseStdin()
}

// imageAgent starts bridle on a model that reads images and answers every
// prompt holding "go", recording the requests it is sent.
func imageAgent(t *testing.T) (a *acptest.Agent, requests, ws string) {
	t.Helper()
	scenario := `{"model": {"images": true}, "turns": [{"match": "go", "calls": [{"text": "seen"}]}]}`
	requests = filepath.Join(t.TempDir(), "requests.jsonl")
	ws = acptest.Workspace(t, nil)
	a = acptest.Start(t, acptest.Options{Model: acptest.Scenario(t, scenario), Env: []string{"BRIDLE_RECORD_REQUESTS=" + requests}})
	a.Initialize()
	return a, requests, ws
}

// requestsWithImages counts the recorded model requests that carry an
// image.
func requestsWithImages(t *testing.T, path string) (withImage, all int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no recorded requests: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		all++
		if strings.Contains(line, `"kind":"image"`) {
			withImage++
		}
	}
	return withImage, all
}

// storedImages lists the images stored next to a database.
func storedImages(db string) []string {
	entries, _ := os.ReadDir(filepath.Join(filepath.Dir(db), "images"))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestMalformedImagesAreRefused: images whose header alone looks fine (a
// decompression bomb, sizes no provider takes, a damaged or cut file, an
// animated GIF) are refused with -32602 saying what was wrong and what to
// do; none is stored, and no later request of the session carries one
// (a provider refusing it would have failed every later turn).
func TestMalformedImagesAreRefused(t *testing.T) {
	a, requests, ws := imageAgent(t)
	sid := a.NewSession(ws)
	cases := imagetest.Malformed()
	refused := 0
	for _, c := range cases {
		_, err := a.Call("session/prompt", imagePrompt(sid, "go: what is this?", c.MIME, base64.StdEncoding.EncodeToString(c.Data)))
		switch {
		case err == nil:
			t.Errorf("%s (%d bytes): accepted", c.Name, len(c.Data))
		case err.Code != -32602 || !strings.Contains(err.Message, c.Want):
			t.Errorf("%s: %v, want -32602 saying %q", c.Name, err, c.Want)
		default:
			refused++
		}
	}
	// A good image with a bad one: the prompt is refused whole, and the
	// good one is not stored either.
	mixed := imagePrompt(sid, "go: and these?", "image/png", pngOf(64, 48))
	bad := cases[len(cases)-1]
	mixed["prompt"] = append(mixed["prompt"].([]any), map[string]string{"type": "image", "mimeType": bad.MIME, "data": base64.StdEncoding.EncodeToString(bad.Data)})
	if _, err := a.Call("session/prompt", mixed); err == nil || err.Code != -32602 || !strings.Contains(err.Message, "prompt[2]") {
		t.Errorf("a prompt with a good image and a bad one: %v, want -32602 naming prompt[2]", err)
	}
	if stop := a.Prompt(sid, "go on, in words"); stop != "end_turn" {
		t.Fatalf("a prompt after the refused images: %s", stop)
	}
	withImage, all := requestsWithImages(t, requests)
	t.Logf("%d malformed images tried: %d refused, %d accepted; %d of %d requests carried an image", len(cases), refused, len(cases)-refused, withImage, all)
	if withImage != 0 {
		t.Errorf("%d of %d model requests carried a malformed image", withImage, all)
	}
	if names := storedImages(a.DB); len(names) != 0 {
		t.Errorf("malformed images were stored: %v", names)
	}
	a.AssertValid(t)
}

// TestImagesGoWithTheirSession: deleting a session removes the images its
// prompts sent that no other session's log refers to; one another
// session (or a fork, which reads its parent's prompts) still refers to
// stays, and goes with the last of them.
func TestImagesGoWithTheirSession(t *testing.T) {
	a, requests, ws := imageAgent(t)
	own, shared := pngOf(30, 20), pngOf(40, 20)
	name := func(data string) string {
		b, _ := base64.StdEncoding.DecodeString(data)
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:])
	}
	prompt := func(sid string, data string) {
		t.Helper()
		a.MustCall("session/prompt", imagePrompt(sid, "go: look", "image/png", data), nil)
	}
	one, two := a.NewSession(ws), a.NewSession(ws)
	prompt(one, own)
	prompt(one, shared)
	prompt(two, shared)
	a.Prompt(two, "go on")
	var fork struct {
		SessionID string `json:"sessionId"`
	}
	a.MustCall("_bridle/fork", map[string]any{"sessionId": two, "prompt": 2}, &fork)
	has := func(want ...string) {
		t.Helper()
		got := storedImages(a.DB)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("stored images %v, want %v", got, want)
		}
	}
	has(name(own), name(shared))

	a.MustCall("session/delete", map[string]any{"sessionId": one}, nil)
	has(name(shared)) // two refers to it
	a.MustCall("session/delete", map[string]any{"sessionId": fork.SessionID}, nil)
	has(name(shared)) // the fork read two's prompt; two still refers to it
	before, _ := requestsWithImages(t, requests)
	a.Prompt(two, "go again")
	if after, _ := requestsWithImages(t, requests); after != before+1 {
		t.Fatalf("the next request of the session that kept the image did not carry it")
	}
	a.MustCall("session/delete", map[string]any{"sessionId": two}, nil)
	has()
	a.AssertValid(t)
}

// TestAMissingImageDoesNotFailTheSession: an image the log refers to that
// is no longer stored (removed by hand, or with a session of another
// database in the same directory that shared it) is sent as a note
// saying so; the session's later turns do not fail.
func TestAMissingImageDoesNotFailTheSession(t *testing.T) {
	a, requests, ws := imageAgent(t)
	sid := a.NewSession(ws)
	a.MustCall("session/prompt", imagePrompt(sid, "go: look", "image/png", pngOf(64, 48)), nil)
	for _, name := range storedImages(a.DB) {
		os.Remove(filepath.Join(filepath.Dir(a.DB), "images", name))
	}
	if _, err := a.Call("session/prompt", acptest.PromptParams(sid, "go on")); err != nil {
		t.Fatalf("a prompt after the session's image was removed: %v", err)
	}
	raw, _ := os.ReadFile(requests)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if last := lines[len(lines)-1]; strings.Contains(last, `"kind":"image"`) || !strings.Contains(last, "no longer stored") {
		t.Errorf("the request after the image was removed: %.400s", last)
	}
	a.AssertValid(t)
}

// TestCheckingAnImageTakesBoundedMemory: checking a prompt's image
// decodes it whole, and Go's decoder keeps a progressive JPEG's every
// coefficient on top of the image. A progressive CMYK JPEG as large as a
// PNG may be (7680×4320) took 759 MB to check; it is refused by its
// header, and the largest one taken (3840×2160) is checked within the
// memory the docs give for the worst image (253 MB).
func TestCheckingAnImageTakesBoundedMemory(t *testing.T) {
	a, _, ws := imageAgent(t)
	sid := a.NewSession(ws)
	jpeg := func(w, h int) string {
		return base64.StdEncoding.EncodeToString(imagetest.ProgressiveJPEG(w, h, 4))
	}
	if _, err := a.Call("session/prompt", imagePrompt(sid, "go: look", "image/jpeg", jpeg(3840, 2160))); err != nil {
		t.Fatalf("a progressive JPEG of 3840×2160: %v", err)
	}
	_, err := a.Call("session/prompt", imagePrompt(sid, "go: look", "image/jpeg", jpeg(7680, 4320)))
	if err == nil || err.Code != -32602 || !strings.Contains(err.Message, "progressive JPEG of 7680×4320 pixels") || !strings.Contains(err.Message, "baseline JPEG or a PNG") {
		t.Errorf("a progressive JPEG of 7680×4320: %v, want -32602 saying it is over the bound and what to send", err)
	}
	hwm := peakRSS(t, a.Cmd.Process.Pid)
	t.Logf("bridle's peak RSS after checking both: %d MiB", hwm>>20)
	if hwm > 320<<20 {
		t.Errorf("bridle's peak RSS is %d MiB after checking one image at a time: over the 253 MB the worst image takes, and bridle's own", hwm>>20)
	}
	a.AssertValid(t)
}
