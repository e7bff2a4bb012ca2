package redact

import (
	"context"
	"testing"

	"github.com/bridle-dev/bridle/internal/testfs"
)

// BenchmarkMicroDotEnvsCurrent is what each prompt and tool call pays for
// the list of .env files (micro: the list alone, a watcher kept by it):
// the watcher's sync and a look at each listed file, nothing changed.
func BenchmarkMicroDotEnvsCurrent(b *testing.B) {
	ws := b.TempDir()
	testfs.WriteTree(b, ws, map[string]string{".env": "K=value-12345678\n", "svc/api/.env.local": "T=token-87654321\n", "src/main.go": "package main\n"})
	d := NewDotEnvs([]string{ws})
	watchedBy(b, d, ws)
	ctx := context.Background()
	if _, err := d.Current(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := d.Current(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
