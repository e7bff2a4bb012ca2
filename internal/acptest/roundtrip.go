package acptest

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/bridle-dev/bridle/acp"
)

// acpTypes are the Go types of package acp for the schema definitions
// bridle writes (responseDefs and paramDefs).
var acpTypes = map[string]func() any{
	"InitializeResponse":             func() any { return new(acp.InitializeResponse) },
	"AuthenticateResponse":           func() any { return new(acp.AuthenticateResponse) },
	"NewSessionResponse":             func() any { return new(acp.NewSessionResponse) },
	"LoadSessionResponse":            func() any { return new(acp.LoadSessionResponse) },
	"ResumeSessionResponse":          func() any { return new(acp.ResumeSessionResponse) },
	"ListSessionsResponse":           func() any { return new(acp.ListSessionsResponse) },
	"CloseSessionResponse":           func() any { return new(acp.CloseSessionResponse) },
	"DeleteSessionResponse":          func() any { return new(acp.DeleteSessionResponse) },
	"SetSessionModeResponse":         func() any { return new(acp.SetSessionModeResponse) },
	"SetSessionConfigOptionResponse": func() any { return new(acp.SetSessionConfigOptionResponse) },
	"PromptResponse":                 func() any { return new(acp.PromptResponse) },
	"ForkSessionResponse":            func() any { return new(acp.ForkSessionResponse) },
	"SessionNotification":            func() any { return new(acp.SessionNotification) },
	"RequestPermissionRequest":       func() any { return new(acp.RequestPermissionRequest) },
	"ReadTextFileRequest":            func() any { return new(acp.ReadTextFileRequest) },
	"WriteTextFileRequest":           func() any { return new(acp.WriteTextFileRequest) },
	"CancelRequestNotification":      func() any { return new(acp.CancelRequestNotification) },
}

// RoundTrip decodes part into package acp's type for def and encodes it
// again: the result must equal part modulo key order, so acp's types
// carry every field bridle writes.
func RoundTrip(def string, part json.RawMessage) error {
	mk := acpTypes[def]
	if mk == nil {
		return fmt.Errorf("package acp has no type registered for %s", def)
	}
	v := mk()
	if err := json.Unmarshal(part, v); err != nil {
		return fmt.Errorf("%s does not decode into acp.%s: %v\n%s", def, def, err, part)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("acp.%s does not encode: %v", def, err)
	}
	var a, b any
	if err := json.Unmarshal(part, &a); err != nil {
		return err
	}
	if err := json.Unmarshal(out, &b); err != nil {
		return err
	}
	if !reflect.DeepEqual(a, b) {
		return fmt.Errorf("%s changes through acp.%s:\n in: %s\nout: %s", def, def, part, out)
	}
	return nil
}
