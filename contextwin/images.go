package contextwin

import (
	"math"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider"
)

// ImageTokens is what an image of w×h pixels costs in a request, by the
// formula of the model's provider: Anthropic's (the image scaled to fit
// 1568 pixels on its long edge and about 1.15 megapixels, then one token
// per 750 pixels) for Claude tokenizers, OpenAI's high-detail tiles (the
// image scaled to fit 2048×2048, then its short side to 768, then 85
// tokens plus 170 per 512-pixel tile) for the others.
func ImageTokens(tokenizer string, w, h int) int {
	if w <= 0 || h <= 0 {
		return 0
	}
	fw, fh := float64(w), float64(h)
	if tokenizer == "claude" {
		scale := math.Min(1, 1568/math.Max(fw, fh))
		scale = math.Min(scale, math.Sqrt(1_150_000/(fw*fh)))
		fw, fh = math.Floor(fw*scale), math.Floor(fh*scale)
		return int(math.Ceil(fw * fh / 750))
	}
	if s := 2048 / math.Max(fw, fh); s < 1 {
		fw, fh = fw*s, fh*s
	}
	if s := 768 / math.Min(fw, fh); s < 1 {
		fw, fh = fw*s, fh*s
	}
	tiles := math.Ceil(fw/512) * math.Ceil(fh/512)
	return 85 + 170*int(tiles)
}

// imageTokens is what the images of a payload cost for tokenizer.
func imageTokens(tokenizer string, p event.Payload) int {
	u, ok := p.(event.UserMessage)
	if !ok {
		return 0
	}
	n := 0
	for _, c := range u.Content {
		if c.Type == "image" {
			n += ImageTokens(tokenizer, c.Width, c.Height)
		}
	}
	return n
}

// userParts is how a prompt reaches the model: its text (an image is
// named there in words), then its stored images, which the session loads
// when it sends the request.
func userParts(u event.UserMessage) []provider.Part {
	parts := []provider.Part{{Kind: provider.PartText, Text: u.ModelText()}}
	for _, c := range u.Content {
		if c.Type == "image" && c.URI != "" {
			parts = append(parts, provider.Part{Kind: provider.PartImage, MimeType: c.MimeType, Ref: c.URI})
		}
	}
	return parts
}
