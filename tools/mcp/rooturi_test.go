package mcp

import (
	"path/filepath"
	"testing"
)

func TestRootURI(t *testing.T) {
	tests := map[string]string{
		"/home/u/w":       "file:///home/u/w",
		"/home/u/my proj": "file:///home/u/my%20proj",
	}
	if filepath.Separator == '\\' {
		tests = map[string]string{
			`C:\Users\u\w`:       "file:///C:/Users/u/w",
			`C:\Users\u\my proj`: "file:///C:/Users/u/my%20proj",
		}
	}
	for dir, want := range tests {
		if got := rootURI(dir); got != want {
			t.Errorf("rootURI(%q) = %q, want %q", dir, got, want)
		}
	}
}
