package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// parseInput decodes a call's arguments. Registry.Check has validated
// them against the schema already; this catches what a schema cannot say
// and calls made without the registry.
func parseInput[T any](tool string, input json.RawMessage) (T, error) {
	var in T
	if len(bytes.TrimSpace(input)) == 0 {
		input = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, fmt.Errorf("%s: the arguments do not match its schema: %v", tool, err)
	}
	return in, nil
}

// schema builds a tool's JSON Schema from its properties and required
// names, closed to other properties.
func schema(properties string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	if required == nil {
		req = []byte("[]")
	}
	return json.RawMessage(`{"type":"object","properties":{` + properties + `},"required":` + string(req) + `,"additionalProperties":false}`)
}
