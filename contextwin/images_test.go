package contextwin

import "testing"

// The figures are the providers' own worked examples where they give one.
func TestImageTokens(t *testing.T) {
	tests := []struct {
		tokenizer string
		w, h      int
		want      int
	}{
		{"o200k_base", 1024, 1024, 765},  // OpenAI: 768×768, 4 tiles
		{"o200k_base", 2048, 4096, 1105}, // OpenAI: 768×1536, 6 tiles
		{"o200k_base", 64, 48, 255},      // one tile
		{"claude", 1000, 1000, 1334},     // Anthropic: w×h/750
		{"claude", 200, 200, 54},
		{"claude", 4000, 3000, 1532}, // scaled to fit 1.15 megapixels
		{"claude", 0, 10, 0},
	}
	for _, tt := range tests {
		if got := ImageTokens(tt.tokenizer, tt.w, tt.h); got != tt.want {
			t.Errorf("ImageTokens(%s, %d, %d) = %d, want %d", tt.tokenizer, tt.w, tt.h, got, tt.want)
		}
	}
}
