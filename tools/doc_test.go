package tools

import "testing"

func TestDocRender(t *testing.T) {
	type data struct {
		Hosts string
		Max   int
	}
	tests := []struct {
		text string
		data any
		want string
	}{
		{"plain", nil, "plain"},
		{"at most {{.Max}} lines", data{Max: 3}, "at most 3 lines"},
		{"{{if .Hosts}}to {{.Hosts}}.{{else}}no network.{{end}} Done", data{Hosts: "a, b"}, "to a, b. Done"},
		{"{{if .Hosts}}to {{.Hosts}}.{{else}}no network.{{end}} Done", data{}, "no network. Done"},
	}
	for _, tt := range tests {
		if got := (doc{name: "t", text: tt.text}).render(tt.data); got != tt.want {
			t.Errorf("render(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
	for _, bad := range []string{"{{.Nope}}", "{{if .Max}}x", "{{range .Max}}", "{{.Max"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("render(%q) did not panic", bad)
				}
			}()
			doc{name: "t", text: bad}.render(data{})
		}()
	}
}
