package app

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/config"
	"github.com/bridle-dev/bridle/internal/testfs"
)

// settingKey is one key of the settings' schema: its path of keys from
// the top (map keys are placeholders), and a value of its type.
type settingKey struct {
	path  []string
	value any
}

// choices are a valid value of each string key that takes one of a set.
var choices = map[string]string{"checkpoint": "scan"}

// schemaKeys lists every key of t, as encoding/json names its fields,
// below prefix; nested is the type a json.RawMessage field holds (the
// sections other packages read).
func schemaKeys(t reflect.Type, prefix []string, nested map[string]reflect.Type) []settingKey {
	var out []settingKey
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		path := append(append([]string{}, prefix...), name)
		ft := f.Type
		if n, ok := nested[name]; ok && ft == reflect.TypeFor[json.RawMessage]() {
			ft = n
		}
		var value any
		switch ft.Kind() {
		case reflect.String:
			value = "v"
			if v, ok := choices[name]; ok {
				value = v // a key with a set of values takes one of them
			}
		case reflect.Int:
			value = 1
		case reflect.Float64:
			value = 0.5
		case reflect.Bool:
			value = true
		case reflect.Slice:
			value = []any{}
		case reflect.Map, reflect.Struct:
			value = map[string]any{}
		default:
			panic("no value for " + ft.String())
		}
		out = append(out, settingKey{path, value})
		switch {
		case ft.Kind() == reflect.Struct:
			out = append(out, schemaKeys(ft, path, nested)...)
		case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
			out = append(out, schemaKeys(ft.Elem(), append(path, "p/m"), nested)...)
		}
	}
	return out
}

// caseVariants are spellings of key that encoding/json takes for it:
// capitalised, upper case, and with an s or a k replaced by the Unicode
// characters that fold to them (ſ, the long s, and K, the Kelvin sign).
func caseVariants(key string) []string {
	vs := []string{strings.ToUpper(key[:1]) + key[1:], strings.ToUpper(key)}
	if strings.Contains(key, "s") {
		vs = append(vs, strings.Replace(key, "s", "\u017f", 1))
	}
	if strings.Contains(key, "k") {
		vs = append(vs, strings.Replace(key, "k", "\u212a", 1))
	}
	return vs
}

// document nests value under path.
func document(path []string, value any) []byte {
	for i := len(path) - 1; i >= 0; i-- {
		value = map[string]any{path[i]: value}
	}
	b, _ := json.Marshal(value)
	return b
}

// TestEverySettingKeyIsCaseSensitive writes every key of the settings'
// schema (the top level, providers, models, context and sandbox) in the
// user's and in a project's file, spelt exactly and in the case and
// Unicode-fold variants encoding/json would take for it. The exact key is
// accepted; a variant is refused with an error naming it as written (or,
// for the sandbox a project may not set at all, ignored) and never takes
// effect.
func TestEverySettingKeyIsCaseSensitive(t *testing.T) {
	keys := schemaKeys(reflect.TypeFor[config.Settings](), nil, map[string]reflect.Type{
		"sandbox": reflect.TypeFor[config.Sandbox](),
		"context": reflect.TypeFor[config.Context](),
	})
	keys = append(keys, settingKey{[]string{"instructions"}, "v"})
	if len(keys) < 40 {
		t.Fatalf("only %d keys found in the schema", len(keys))
	}
	tried := 0
	for _, k := range keys {
		name := strings.Join(k.path, ".")
		t.Run(name, func(t *testing.T) {
			exact := document(k.path, k.value)
			m, _ := settingsIn(t, exact, nil)
			if c := m.Config(""); c.Err != nil || c.ContextErr != nil {
				t.Fatalf("the exact key %s in the user's file: %v %v", exact, c.Err, c.ContextErr)
			}
			if _, err := config.ParseSandbox(m.Config("").Settings.Sandbox); err != nil {
				t.Fatalf("the exact key %s in the user's file: %v", exact, err)
			}
			last := len(k.path) - 1
			for _, v := range caseVariants(k.path[last]) {
				tried++
				path := append(append([]string{}, k.path[:last]...), v)
				doc := document(path, k.value)
				quoted := `"` + v + `"`

				m, _ := settingsIn(t, doc, nil)
				c := m.Config("")
				msg := errText(c.Err) + errText(c.ContextErr)
				if k.path[0] == "sandbox" && len(k.path) > 1 {
					_, err := config.ParseSandbox(c.Settings.Sandbox)
					msg = errText(err)
					if s := m.Sandbox(); !reflect.DeepEqual(s, config.Sandbox{}) {
						t.Errorf("user's %s took effect: %+v", doc, s)
					}
				}
				if !strings.Contains(msg, quoted) || !strings.Contains(msg, "case-sensitive") {
					t.Errorf("user's %s: error %q does not name %s as a case variant", doc, msg, quoted)
				}
				if c.Err == nil && (c.Settings.Model != "" || len(c.Settings.Providers) > 0 || len(c.Settings.Models) > 0 || len(c.Settings.TrustedProjects) > 0 || len(c.Settings.Instructions) > 0) {
					t.Errorf("user's %s took effect: %+v", doc, c.Settings)
				}

				m, proj := settingsIn(t, nil, doc)
				c = m.Config(proj)
				msg = errText(c.Err) + errText(c.ContextErr)
				if k.path[0] == "sandbox" && len(k.path) > 1 {
					// A project's "sandbox" is dropped whole, whatever it holds.
					if len(c.Settings.Sandbox) != 0 || c.Err != nil || len(c.Settings.Warnings) != 1 || !strings.Contains(c.Settings.Warnings[0], `"sandbox" is ignored`) {
						t.Errorf("project's %s: sandbox %s, err %v, warnings %q", doc, c.Settings.Sandbox, c.Err, c.Settings.Warnings)
					}
					continue
				}
				// The context's error is the merged section's, which names
				// no file.
				file := filepath.Join(proj, ".bridle", "settings.json")
				if !strings.Contains(msg, quoted) || !strings.Contains(msg, "case-sensitive") || k.path[0] != "context" && !strings.Contains(msg, file) {
					t.Errorf("project's %s: error %q does not name the file and %s as a case variant", doc, msg, quoted)
				}
			}
		})
	}
	t.Logf("%d keys, %d variants, each in the user's and a project's file", len(keys), tried)
}

// settingsIn writes the user's and a project's settings (nil: none) and
// returns Models reading them and the project's directory.
func settingsIn(t *testing.T, user, project []byte) (*Models, string) {
	t.Helper()
	cfg, proj := t.TempDir(), t.TempDir()
	if user != nil {
		testfs.Write(t, filepath.Join(cfg, "bridle", "settings.json"), string(user))
	}
	if project != nil {
		testfs.Write(t, filepath.Join(proj, ".bridle", "settings.json"), string(project))
	}
	return modelsFor(cfg), proj
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
