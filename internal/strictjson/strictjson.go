// Package strictjson reads JSON whose keys must be spelt exactly, as a
// settings file's must. encoding/json matches an object's keys to struct
// fields case-insensitively, with Unicode folding: "Providers",
// "PROVIDERS" and "provider\u017f" (a long s) all set the field tagged
// "providers". A check that looks for the exact key then misses what the
// decoder takes. Check walks a document against a Go type and names every
// key no field is spelt as, and every key given twice; Unmarshal decodes
// only a document with neither.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Key is a key of a JSON object that the Go type does not have.
type Key struct {
	// Path is where the object is: "" for the top, else its keys from
	// the top joined by dots ("providers.anthropic").
	Path string
	// Name is the key as the document spells it.
	Name string
	// Field is the field's name the key differs from only in case
	// (Unicode case folding, which encoding/json would have matched);
	// "" when it is no field's.
	Field string
}

// Error says what is wrong with the key, naming it as written.
func (k Key) Error() string {
	where := ""
	if k.Path != "" {
		where = " in " + k.Path
	}
	if k.Field != "" {
		return fmt.Sprintf("%q%s is not %q: keys are case-sensitive, write %q", k.Name, where, k.Field, k.Field)
	}
	return fmt.Sprintf("unknown key %q%s", k.Name, where)
}

// DuplicateError is a key given twice in one object: decoders disagree on
// which one counts, so neither does.
type DuplicateError struct{ Path, Name string }

func (e *DuplicateError) Error() string {
	where := "at the top"
	if e.Path != "" {
		where = "in " + e.Path
	}
	return fmt.Sprintf("key %q appears twice %s: give it once", e.Name, where)
}

// Check lists the keys of data that t (a struct, map, slice or pointer
// to one; values whose type decodes itself, such as json.RawMessage, and
// interface values are not looked into) has no field spelt as, in the
// order they appear. The value of a key that is a field's name in
// another case is checked as that field's, so that "Providers":
// {"a": {"Base_Url": ...}} names both keys; an unknown key's is not. A key given twice in one object, or data that is
// not one JSON value, is an error. A value of another JSON type than the
// field's is left to the decoder to report.
func Check(data []byte, t reflect.Type) ([]Key, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	c := checker{dec: dec}
	if err := c.value(t, ""); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = errors.New("more than one JSON value")
		}
		return nil, err
	}
	return c.unknown, nil
}

// Unmarshal decodes data into v if every key of it is spelt as a field
// of v's type and none is given twice; otherwise it returns the first
// unknown key (a Key) or the DuplicateError.
func Unmarshal(data []byte, v any) error {
	keys, err := Check(data, reflect.TypeOf(v))
	if err != nil {
		return err
	}
	if len(keys) > 0 {
		return keys[0]
	}
	return json.Unmarshal(data, v)
}

type checker struct {
	dec     *json.Decoder
	unknown []Key
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// value reads one value, checking it against t; path names it.
func (c *checker) value(t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer && !t.Implements(unmarshaler) {
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface || t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler) {
		return c.skip()
	}
	tok, err := c.dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		switch t.Kind() {
		case reflect.Struct:
			fields := fieldsOf(t)
			return c.object(path, func(key, at string) error {
				if f, ok := fields[key]; ok {
					return c.value(f, at)
				}
				k := Key{Path: path, Name: key, Field: foldedField(fields, key)}
				c.unknown = append(c.unknown, k)
				if k.Field != "" {
					// What encoding/json would decode it as, so that the
					// keys inside are named too.
					return c.value(fields[k.Field], at)
				}
				return c.skip()
			})
		case reflect.Map:
			return c.object(path, func(_, at string) error { return c.value(t.Elem(), at) })
		}
		return c.object(path, func(string, string) error { return c.skip() })
	case json.Delim('['):
		elem := reflect.Type(nil)
		if k := t.Kind(); k == reflect.Slice || k == reflect.Array {
			elem = t.Elem()
		}
		for i := 0; c.dec.More(); i++ {
			if err := c.value(elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err := c.dec.Token() // ']'
		return err
	}
	return nil
}

// object reads the members of an object whose '{' was read, refusing a
// key given twice, and the closing '}'.
func (c *checker) object(path string, member func(key, at string) error) error {
	seen := map[string]bool{}
	for c.dec.More() {
		tok, err := c.dec.Token()
		if err != nil {
			return err
		}
		key := tok.(string) // the decoder allows nothing else here
		if seen[key] {
			return &DuplicateError{Path: path, Name: key}
		}
		seen[key] = true
		at := key
		if path != "" {
			at = path + "." + key
		}
		if err := member(key, at); err != nil {
			return err
		}
	}
	_, err := c.dec.Token() // '}'
	return err
}

// skip reads one value whatever it holds. Keys inside it are not checked
// (its type reads it), but it must be well formed.
func (c *checker) skip() error {
	var raw json.RawMessage
	return c.dec.Decode(&raw)
}

// fieldsOf maps the JSON names of t's fields to their types, as
// encoding/json names them: the tag's name, else the field's; fields of
// untagged embedded structs promoted; "-" and unexported fields left out.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && f.Tag.Get("json") == "-" {
			continue
		}
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range fieldsOf(ft) {
					if _, shadowed := out[k]; !shadowed {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = ft
	}
	return out
}

// foldedField returns the field whose name key matches only under
// Unicode case folding, the rule encoding/json matches by.
func foldedField(fields map[string]reflect.Type, key string) string {
	for name := range fields {
		if strings.EqualFold(name, key) {
			return name
		}
	}
	return ""
}
