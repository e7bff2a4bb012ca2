package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Stub stands, in a live session's memory, for an event whose payload is
// not held there: one before the session's window starts (its latest
// compaction), which the model no longer reads. The store has the whole
// event; what reads old payloads (a replay, a rewind, a compaction's
// plan, what the model has seen) reads them from it. A stub keeps the
// kind, and the two numbers the context window's scan of the whole log
// reads of it: the usage correction is derived from every model call's
// reported usage against the raw count of the request before it.
//
// Kinds whose Facts say Kept are never stubbed: something reads them
// from the whole log (pins, standing answers, rewinds, the mode). The
// Event of a stub may carry no Time and no Tokens (a session reads
// neither for the events it loads as stubs but for the prompts): what
// needs them reads the event whole.
type Stub struct {
	Of Kind
	// Reported is an assistant message's input as its provider reported
	// it (Usage.Reported); 0 for other kinds.
	Reported int
	// Raw is a context_assembled's raw count; 0 for other kinds.
	Raw int
}

// Kind returns the kind of the event the stub stands for.
func (s *Stub) Kind() Kind { return s.Of }

// Line says the event is not held; `bridle log` reads the store, never a
// stub.
func (s *Stub) Line() string { return fmt.Sprintf("(%s, not held in memory)", s.Of) }

// Reported is the input of the request as the provider reported it: its
// uncached, cache-read and cache-written tokens.
func (u Usage) Reported() int { return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens }

// StubOf returns the stub of p, a decoded payload of a kind that is not
// Kept.
func StubOf(p Payload) Stub {
	s := Stub{Of: p.Kind()}
	switch v := p.(type) {
	case AssistantMessage:
		s.Reported = v.Usage.Reported()
	case ContextAssembled:
		s.Raw = v.Raw
	}
	return s
}

// BareStub is the stub of an event of kind whose payload was not read:
// its numbers are 0 (a session reads those of its latest model calls
// only, which the usage correction follows). Its payload is checked when
// something reads it whole. Every bare stub of a kind is the same one,
// shared (a stub is never changed).
func BareStub(kind Kind) (*Stub, error) {
	of, ok := known[kind]
	if !ok {
		return nil, fmt.Errorf("unknown event kind %q (written by a newer bridle?)", kind)
	}
	return bare[of], nil
}

// bare holds the bare stub of each kind.
var bare = func() map[Kind]*Stub {
	m := map[Kind]*Stub{}
	for k := range decoders {
		m[k] = &Stub{Of: k}
	}
	return m
}()

// ReadStub returns the stub of a stored payload of kind, refusing what
// Decode refuses (an unknown kind, a newer version), without decoding
// the payload whole: a session's load reads every stored event before its
// window's start, and decoding them cost most of it.
func ReadStub(kind Kind, data []byte) (Stub, error) {
	// The kind's own constant: a stub outlives the record it was read
	// from, and must not keep its bytes.
	of, ok := known[kind]
	if !ok {
		return Stub{}, fmt.Errorf("unknown event kind %q (written by a newer bridle?)", kind)
	}
	s := Stub{Of: of}
	var usage Usage
	read := true
	if ofThisVersion(data) {
		switch of {
		case KindAssistantMessage:
			read = member(data, usageKey, true, &usage)
		case KindContextAssembled:
			read = member(data, rawKey, false, &s.Raw)
		}
	} else {
		read = false
	}
	if !read {
		// Not as this bridle writes it: Decode reads it the long way, or
		// says what is wrong.
		p, err := Decode(kind, data)
		if err != nil {
			return Stub{}, err
		}
		return StubOf(p), nil
	}
	s.Reported = usage.Reported()
	return s, nil
}

// SeenKey starts a tool result's Seen in its stored payload, where a
// reader that wants only it may have it cut (store.Range.From).
var SeenKey = []byte(`"seen":`)

// SeenOf reads a stored tool result's Seen from the part of its payload
// that begins with SeenKey (nil: it has none), without the rest (its
// output): what the model has seen is rebuilt from every result of the
// log. In JSON as encoding/json writes it, a quote inside a string is
// always escaped, so SeenKey is found only where the member begins.
func SeenOf(from []byte) ([]FileSeen, error) {
	var seen []FileSeen
	if from == nil {
		return nil, nil
	}
	if !member(from, SeenKey, false, &seen) {
		return nil, fmt.Errorf("decode %s event: its seen files are not a list of files", KindToolResult)
	}
	return seen, nil
}

var (
	usageKey = []byte(`"usage":`)
	rawKey   = []byte(`"raw":`)
)

// member decodes into v the value of a stored payload's member named by
// key (`"name":`) without reading the rest, and reports whether it could;
// a member that is absent leaves v as it is. In JSON as encoding/json
// writes it, a quote inside a string is always escaped, so key can only
// be a member's name: the members read so are named nowhere else in
// their payloads (a context_assembled's raw, a tool result's seen), or
// last, after what the model wrote (an assistant message's usage, after
// its calls' inputs: last says the member must close the payload).
func member(data, key []byte, last bool, v any) bool {
	i := bytes.LastIndex(data, key)
	if i < 0 {
		return !last
	}
	rest := data[i+len(key):]
	n := valueEnd(rest)
	if n < 0 || json.Unmarshal(rest[:n], v) != nil {
		return false
	}
	return !last || string(bytes.TrimSpace(rest[n:])) == "}"
}

// valueEnd returns the length of the JSON value data begins with (its
// leading space included), or -1 when it does not hold a whole one. It
// only finds where the value ends; json.Unmarshal checks it.
func valueEnd(data []byte) int {
	depth, inString, escaped, started := 0, false, false, false
	for i, c := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				if depth == 0 {
					return i + 1
				}
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			if started && depth == 0 {
				return i // a number or a literal ends
			}
		case '"':
			inString, started = true, true
		case '{', '[':
			depth++
			started = true
		case '}', ']', ',':
			if depth == 0 {
				if started {
					return i // a number or a literal ends
				}
				return -1
			}
			if c != ',' {
				if depth--; depth == 0 {
					return i + 1
				}
			}
		default:
			started = true
		}
	}
	if started && depth == 0 && !inString {
		return len(data)
	}
	return -1
}

// known maps each kind to its own constant.
var known = func() map[Kind]Kind {
	m := make(map[Kind]Kind, len(decoders))
	for k := range decoders {
		m[k] = k
	}
	return m
}()

var versionPrefix = []byte(`{"v":` + strconv.Itoa(Version))

// ofThisVersion says a stored payload begins with this bridle's version,
// as Encode writes it (V is every payload's first field).
func ofThisVersion(data []byte) bool {
	rest, ok := bytes.CutPrefix(data, versionPrefix)
	return ok && len(rest) > 0 && (rest[0] == ',' || rest[0] == '}')
}
