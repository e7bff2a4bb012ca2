package lsp

import (
	"testing"

	"go.lsp.dev/protocol"
)

// TestDiagnosticItemsBySeverity: the diagnostics tool shows what is as
// severe as asked or more, errors first.
func TestDiagnosticItemsBySeverity(t *testing.T) {
	d := func(sev protocol.DiagnosticSeverity, line uint32, msg string) protocol.Diagnostic {
		return protocol.Diagnostic{Severity: sev, Message: msg, Range: protocol.Range{Start: protocol.Position{Line: line}}}
	}
	files := map[string]fileDiags{
		"/w/a.go": {items: []protocol.Diagnostic{d(protocol.DiagnosticSeverityHint, 0, "hint"), d(protocol.DiagnosticSeverityWarning, 1, "warn")}},
		"/w/b.go": {items: []protocol.Diagnostic{d(protocol.DiagnosticSeverityInformation, 2, "info"), d(0, 3, "no severity: an error")}},
	}
	for _, c := range []struct {
		least string
		want  []string
	}{
		{"error", []string{"error no severity: an error"}},
		{"warning", []string{"error no severity: an error", "warning warn"}},
		{"", []string{"error no severity: an error", "warning warn"}},
		{"info", []string{"error no severity: an error", "warning warn", "info info"}},
		{"hint", []string{"error no severity: an error", "warning warn", "info info", "hint hint"}},
	} {
		var got []string
		for _, it := range diagnosticItems(files, c.least) {
			got = append(got, it.Label)
		}
		if len(got) != len(c.want) {
			t.Errorf("%q: %q, want %q", c.least, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%q: %q, want %q", c.least, got, c.want)
				break
			}
		}
	}
}
