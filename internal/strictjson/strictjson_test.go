package strictjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

type inner struct {
	BaseURL string            `json:"base_url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

type base struct {
	Model string `json:"model"`
	Skip  string `json:"-"`
}

type doc struct {
	base
	Providers map[string]inner `json:"providers"`
	List      []inner          `json:"list"`
	Ptr       *inner           `json:"ptr"`
	Raw       json.RawMessage  `json:"raw"`
	Any       any              `json:"any"`
	Key       string           `json:"key"`
	Untagged  int
	Dash      string `json:"-,"`
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []Key
		err  string
	}{
		{name: "exact keys", data: `{"model":"m","providers":{"Any Name":{"base_url":"u","headers":{"X-Any":"v"}}},"list":[{"base_url":"u"}],"ptr":{"base_url":"u"},"raw":{"Whatever":1},"any":{"Else":2},"Untagged":1,"-":"d"}`},
		{name: "case", data: `{"Model":"m"}`, want: []Key{{Name: "Model", Field: "model"}}},
		{name: "upper", data: `{"PROVIDERS":{}}`, want: []Key{{Name: "PROVIDERS", Field: "providers"}}},
		{name: "long s", data: `{"provider\u017f":{}}`, want: []Key{{Name: "providerſ", Field: "providers"}}},
		{name: "long s unescaped", data: `{"providerſ":{}}`, want: []Key{{Name: "providerſ", Field: "providers"}}},
		{name: "kelvin sign", data: `{"\u212aey":"k"}`, want: []Key{{Name: "\u212aey", Field: "key"}}},
		{name: "in a map's value", data: `{"providers":{"a":{"Base_Url":"u"}}}`, want: []Key{{Path: "providers.a", Name: "Base_Url", Field: "base_url"}}},
		{name: "in a list", data: `{"list":[{},{"BASE_URL":"u"}]}`, want: []Key{{Path: "list[1]", Name: "BASE_URL", Field: "base_url"}}},
		{name: "untagged field by a folded name", data: `{"untagged":1}`, want: []Key{{Name: "untagged", Field: "Untagged"}}},
		{name: "a field tagged -", data: `{"Skip":"x"}`, want: []Key{{Name: "Skip"}}},
		{name: "unknown", data: `{"modle":"m","providers":{"a":{"base_ulr":"u"}}}`, want: []Key{{Name: "modle"}, {Path: "providers.a", Name: "base_ulr"}}},
		{name: "unknown keys inside an unknown value are not looked into", data: `{"other":{"Model":1}}`, want: []Key{{Name: "other"}}},
		{name: "keys inside a case variant are", data: `{"Providers":{"a":{"Base_Url":"u"}}}`, want: []Key{{Name: "Providers", Field: "providers"}, {Path: "Providers.a", Name: "Base_Url", Field: "base_url"}}},
		{name: "wrong JSON type is the decoder's to report", data: `{"providers":[{"Model":1}],"model":{"x":1}}`},
		{name: "duplicate", data: `{"model":"a","model":"b"}`, err: `key "model" appears twice at the top`},
		{name: "duplicate inside", data: `{"providers":{"a":{},"a":{}}}`, err: `key "a" appears twice in providers`},
		{name: "duplicate by escape", data: `{"model":"a","mod\u0065l":"b"}`, err: `key "model" appears twice`},
		{name: "not JSON", data: `{"model":`, err: "EOF"},
		{name: "two values", data: `{} {}`, err: "more than one JSON value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Check([]byte(tt.data), reflect.TypeFor[doc]())
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Check = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestFoldedKeysAreWhatEncodingJSONTakes proves the premise: every key
// Check calls a case variant is one encoding/json decodes into the field.
func TestFoldedKeysAreWhatEncodingJSONTakes(t *testing.T) {
	for _, key := range []string{"Model", "MODEL", "mOdEl", "\\u004dodel"} {
		var d doc
		if err := json.Unmarshal([]byte(`{"`+key+`":"x"}`), &d); err != nil || d.Model != "x" {
			t.Errorf("encoding/json did not take %q as model", key)
		}
	}
	var d struct {
		S string `json:"s"`
		K string `json:"k"`
	}
	if err := json.Unmarshal([]byte(`{"\u017f":"long s","\u212a":"kelvin"}`), &d); err != nil || d.S != "long s" || d.K != "kelvin" {
		t.Fatalf("encoding/json no longer folds ſ to s and K to k (%+v, %v): this package's premise changed", d, err)
	}
}

func TestUnmarshal(t *testing.T) {
	var d doc
	if err := Unmarshal([]byte(`{"model":"m","ptr":{"base_url":"u"}}`), &d); err != nil || d.Model != "m" || d.Ptr.BaseURL != "u" {
		t.Fatalf("Unmarshal = %+v, %v", d, err)
	}
	d = doc{}
	err := Unmarshal([]byte(`{"Model":"m"}`), &d)
	var k Key
	if !errors.As(err, &k) || k.Name != "Model" || d.Model != "" {
		t.Fatalf("a case variant: err = %v, model = %q; want the key refused and nothing set", err, d.Model)
	}
	if want := `"Model" is not "model": keys are case-sensitive, write "model"`; err.Error() != want {
		t.Errorf("message = %q, want %q", err, want)
	}
	err = Unmarshal([]byte(`{"providers":{"a":{"base_ulr":"u"}}}`), &d)
	if err == nil || err.Error() != `unknown key "base_ulr" in providers.a` {
		t.Errorf("unknown key: %v", err)
	}
	var dup *DuplicateError
	if err := Unmarshal([]byte(`{"model":"a","model":"b"}`), &d); !errors.As(err, &dup) {
		t.Errorf("duplicate: %v", err)
	}
}
