// Package acp is the Agent Client Protocol's vocabulary: the types of
// every message and the method names, generated from the vendored official
// schema (testdata/acp/schema.unstable.json). It is a leaf: no transport,
// nothing of the project.
//
// The unstable schema is the stable one (testdata/acp/schema.json) plus the
// methods and fields still being settled, marked **UNSTABLE** in their
// comments; bridle needs one of them, session/fork, which clients already
// call. Nothing of the stable schema is missing from it, and internal/acptest
// checks what bridle writes against both.
package acp

//go:generate go run ../internal/acpgen -schema ../testdata/acp/schema.unstable.json -o types_gen.go

import (
	"encoding/json"
	"fmt"
)

// Version is the ACP version bridle speaks.
const Version ProtocolVersion = 1

// UnionError says a union's discriminator is missing or unknown.
type UnionError struct {
	Union, Field, Value string
}

func (e *UnionError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("%q is required (%s)", e.Field, e.Union)
	}
	return fmt.Sprintf("%q: %q is not a %s", e.Field, e.Value, e.Union)
}

// marshalTagged writes v's fields with the discriminator first.
func marshalTagged(key, value string, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	// {"key":"value" and the fields: the key is a field name of the
	// schema's, the value one of its tags.
	tag, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	head := append(append([]byte(`{"`+key+`":`), tag...), '}')
	if string(b) == "{}" || string(b) == "null" {
		return head, nil
	}
	return append(append(head[:len(head)-1], ','), b[1:]...), nil
}
