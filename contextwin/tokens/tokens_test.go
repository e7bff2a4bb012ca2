package tokens

import (
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExactCounts(t *testing.T) {
	tests := []struct {
		family, text string
		want         int
	}{
		// Figures from OpenAI's tiktoken.
		{O200kBase, "hello world", 2},
		{CL100kBase, "hello world", 2},
		{O200kBase, "", 0},
		{CL100kBase, "tiktoken is great!", 6},
	}
	for _, tt := range tests {
		c := For(tt.family)
		if !c.Exact() || c.Name() != tt.family {
			t.Fatalf("For(%q) = %s exact=%v", tt.family, c.Name(), c.Exact())
		}
		if got := c.Count(tt.text); got != tt.want {
			t.Errorf("%s.Count(%q) = %d, want %d", tt.family, tt.text, got, tt.want)
		}
	}
	if c := For("claude"); c.Exact() || c.Name() != "estimate" {
		t.Errorf("For(claude) = %s exact=%v, want the estimate", c.Name(), c.Exact())
	}
}

// TestEstimateTracksO200k checks the estimate against the exact encoder on
// real text of several kinds: this repository's Go sources and docs.
func TestEstimateTracksO200k(t *testing.T) {
	root := filepath.Join("..", "..")
	var corpus []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
			return fs.SkipDir
		}
		if strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".md") || strings.HasSuffix(p, ".json") {
			if b, err := os.ReadFile(p); err == nil && len(b) > 200 && len(b) < 200_000 {
				corpus = append(corpus, string(b))
			}
		}
		return nil
	})
	if len(corpus) < 10 {
		t.Fatalf("corpus too small: %d files", len(corpus))
	}
	exact := For(O200kBase)
	var sumE, sumX, worst float64
	for _, s := range corpus {
		e, x := float64(Estimate{}.Count(s)), float64(exact.Count(s))
		sumE += e
		sumX += x
		worst = math.Max(worst, math.Abs(e-x)/x)
	}
	total := (sumE - sumX) / sumX
	t.Logf("%d files: estimate %.0f, o200k %.0f tokens (%+.1f %%), worst file %.1f %%", len(corpus), sumE, sumX, 100*total, 100*worst)
	if math.Abs(total) > 0.10 {
		t.Errorf("estimate is off by %+.1f %% over the corpus; want within 10 %%", 100*total)
	}
	if worst > 0.25 {
		t.Errorf("worst file is off by %.1f %%; want within 25 %%", 100*worst)
	}
}
