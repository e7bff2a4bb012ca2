package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
)

// A tool call's input is JSON the model wrote. Its strings are redacted
// one by one, with JSON's escapes undone, so that what is stored is JSON
// again. A string is also judged by the keys above it, as the assignment
// pattern judges NAME=value in a text: {"env": {"API_KEY": "…"}} holds a
// secret that no string of it shows alone. And the whole text is
// redacted too, as a backstop: what that finds and the walk left (a key
// block cut into an array of its lines, whose first and last lines alone
// look like a key) makes the input stored as that text, a JSON string.

// RedactJSON returns data, a JSON text (a tool call's input), with the
// secrets in its strings replaced, and whether there were any. Strings
// (keys too) are redacted with their escapes undone; a string below a
// key that names a secret (secretKey), at any depth, loses the value it
// starts with as NAME=value would (secretValue). The result is valid
// JSON, its keys in the order they had, the markers unescaped; data
// without secrets is returned as it is. Data that is not JSON, or in
// which redacting the whole text finds a secret the walk left, is
// redacted as text and returned as a JSON string.
func (r *Redactor) RedactJSON(data []byte) ([]byte, bool) {
	if len(data) == 0 {
		return data, false
	}
	text := string(data)
	sc := r.scan(text)
	if sc.none() && !strings.Contains(text, `\`) && !strings.Contains(text, "-----END") {
		// Nothing to start a match from, in the text or in any string of
		// it (no escape to undo): most inputs, a path or a command.
		return data, false
	}
	w := jsonWalk{r: r}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	err := w.value(dec, false)
	if err == nil {
		if _, end := dec.Token(); end != io.EOF {
			err = errors.New("more than one JSON value")
		}
	}
	whole := r.hitsOf(text, sc, false, 0)
	switch {
	case err != nil || !json.Valid(w.out.Bytes()):
		// The provider keeps arguments that are not JSON as a JSON
		// string, so this is not expected.
		if len(whole) == 0 {
			return data, false
		}
		return jsonString(render(text, whole)), true
	case len(whole) > 0 && w.missed(text, whole):
		// The walk's finds are redacted after the whole text's: as known
		// values, they would be found first, and hide the context the
		// whole text's patterns need (a key block's first line).
		return jsonString(known(w.found).Redact(render(text, whole))), true
	case !w.changed:
		return data, false
	}
	return w.out.Bytes(), true
}

// jsonWalk copies a JSON value with its strings redacted.
type jsonWalk struct {
	r       *Redactor
	out     bytes.Buffer
	changed bool
	// found are the secrets replaced, for a whole-text redaction that
	// must find them too (missed).
	found []literal
}

// value copies the next JSON value of dec; secret says it lies below a
// key that names a secret.
func (w *jsonWalk) value(dec *json.Decoder, secret bool) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		w.out.WriteString(t.String())
		for first := true; dec.More(); first = false {
			if !first {
				w.out.WriteByte(',')
			}
			below := secret
			if t == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key, ok := k.(string)
				if !ok {
					return errors.New("an object key that is not a string")
				}
				w.string(key, false)
				w.out.WriteByte(':')
				below = secret || secretKey(key)
			}
			if err := w.value(dec, below); err != nil {
				return err
			}
		}
		end, err := dec.Token()
		if err != nil {
			return err
		}
		d, ok := end.(json.Delim)
		if !ok {
			return errors.New("unbalanced JSON")
		}
		w.out.WriteString(d.String())
	case string:
		w.string(t, secret)
	case json.Number:
		w.out.WriteString(t.String())
	case bool:
		if t {
			w.out.WriteString("true")
		} else {
			w.out.WriteString("false")
		}
	case nil:
		w.out.WriteString("null")
	}
	return nil
}

// string copies s redacted; secret says it lies below a key that names a
// secret.
func (w *jsonWalk) string(s string, secret bool) {
	hs := w.r.hits(s, false)
	if secret {
		if end := secretValue(s); end > 0 {
			hs = merge(append(hs, hit{start: 0, end: end, from: 0, to: end, kind: "assignment"}))
		}
	}
	if len(hs) == 0 {
		writeString(&w.out, s)
		return
	}
	w.changed = true
	for _, h := range hs {
		w.found = append(w.found, literal{value: s[h.start:h.end], kind: h.kind})
	}
	writeString(&w.out, render(s, hs))
}

// missed says whether the walk left a secret that redacting text, the
// walk's input, as a whole finds (hs): a secret still found in what the
// walk wrote, or a piece of one (its text between two quotes, as long as
// a secret can be) still there, whose context the walk's own markers
// took away.
func (w *jsonWalk) missed(text string, hs []hit) bool {
	out := w.out.String()
	if len(w.r.hits(out, false)) > 0 {
		return true
	}
	for _, h := range hs {
		for piece := range strings.SplitSeq(text[h.start:h.end], `"`) {
			if len(piece) >= minSecretLen && strings.Contains(out, piece) {
				return true
			}
		}
	}
	return false
}

// known returns a redactor that knows the values found, and no other.
func known(found []literal) *Redactor {
	r := &Redactor{}
	for _, l := range found {
		r.add(l.value, l.kind)
	}
	return r
}

// secretKey says whether a JSON key names a secret as the assignment
// pattern takes the name before "key": the run of name characters the
// key ends with holds one of the pattern's words and looks secret
// (SecretName).
func secretKey(key string) bool {
	start := len(key)
	for start > 0 && nameChar(key[start-1]) {
		start--
	}
	for start < len(key) && !isWord(key[start]) {
		start++
	}
	name := strings.ToLower(key[start:])
	if name == "" {
		return false
	}
	for _, p := range patterns() {
		if p.kind == "assignment" && slices.ContainsFunc(p.hint, func(h string) bool { return strings.Contains(name, h) }) {
			return SecretName(key[start:])
		}
	}
	return false
}

// secretValue returns where the value a secret-named key holds ends, as
// the assignment pattern takes it: the run of value characters s starts
// with, when it is as long as a secret and a literal one (letters and
// digits, no reference to a variable); 0 when s starts with none.
func secretValue(s string) int {
	end := 0
	for end < len(s) && valueChar(s[end]) {
		end++
	}
	if end < minSecretLen || !literalSecret(s[:end]) {
		return 0
	}
	return end
}

// jsonString is s as a JSON string.
func jsonString(s string) []byte {
	var b bytes.Buffer
	writeString(&b, s)
	return b.Bytes()
}

// writeString writes s as a JSON string, without escaping <, > and &:
// the text stays as the model wrote it.
func writeString(out *bytes.Buffer, s string) {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	out.Truncate(out.Len() - 1) // Encode's newline
}
