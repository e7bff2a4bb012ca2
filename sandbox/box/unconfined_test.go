package box

import "testing"

func TestUnconfined(t *testing.T) {
	layer := func(name string, ok bool) Layer { return Layer{Name: name, OK: ok} }
	tests := []struct {
		name   string
		layers []Layer
		want   string
	}{
		{"every layer", []Layer{layer("network namespace", true), layer("read-only root", true), layer("landlock", true)}, ""},
		{"landlock alone keeps writes in", []Layer{layer("network namespace", true), layer("read-only root", false), layer("landlock", true)}, ""},
		{"read-only root alone keeps writes in", []Layer{layer("network namespace", true), layer("read-only root", true), layer("landlock", false)}, ""},
		{"neither write layer", []Layer{layer("network namespace", true), layer("read-only root", false), layer("landlock", false)},
			"commands can write anywhere this user can"},
		{"no network namespace", []Layer{layer("network namespace", false), layer("read-only root", true), layer("landlock", true)},
			"commands share the host network"},
		{"nothing applied, or not Linux", (&Box{}).layers(Outcome{}, nil).Layers,
			"commands can write anywhere this user can; commands share the host network"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (Report{Layers: tt.layers}).Unconfined(); got != tt.want {
				t.Errorf("Unconfined() = %q, want %q", got, tt.want)
			}
		})
	}
}
