package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/session"
)

// JSON-RPC and ACP error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
	CodeAuthRequired   = -32000
	CodeNotFound       = -32002
	CodeCancelled      = -32800
	// CodeBusy is bridle's, in JSON-RPC's server range (ACP leaves -32001
	// undefined): the session is running a prompt already, here or in
	// another bridle process. Retry once it has finished.
	CodeBusy = -32001
)

// paramError is a -32602 naming the offending field.
type paramError struct{ msg string }

func (e *paramError) Error() string { return e.msg }

func missing(field string) error {
	return &paramError{fmt.Sprintf("invalid params: %q is required", field)}
}

func invalidField(field, what string, args ...any) error {
	return &paramError{fmt.Sprintf("invalid params: %q %s", fmt.Sprintf(field, args...), what)}
}

// decode unmarshals params into dst, turning every failure into a -32602
// that names the field. It is the one parse of a request's params: ACP's
// types carry _meta as an object, so a _meta of another kind fails here
// too, by name.
func decode(raw *json.RawMessage, dst any) error {
	if raw == nil {
		return nil
	}
	t := bytes.TrimSpace(*raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return nil
	}
	if t[0] != '{' {
		return &paramError{"invalid params: params must be a JSON object"}
	}
	if err := json.Unmarshal(t, dst); err != nil {
		var te *json.UnmarshalTypeError
		var ue *acp.UnionError
		switch {
		case errors.As(err, &te):
			field := te.Field
			if field == "" {
				field = "params"
			}
			return &paramError{fmt.Sprintf("invalid params: %q must be %s, not %s", field, jsonKind(te.Type.Kind().String()), te.Value)}
		case errors.As(err, &ue):
			return &paramError{"invalid params: " + ue.Error()}
		}
		return &paramError{"invalid params: " + err.Error()}
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "a boolean"
	case "ptr":
		return "a number"
	}
	if strings.HasPrefix(goKind, "int") || strings.HasPrefix(goKind, "uint") || strings.HasPrefix(goKind, "float") {
		return "a number"
	}
	return goKind
}

// toRPCError maps an error from the session layer to a JSON-RPC error
// whose message says what was wrong and what to do.
func toRPCError(err error) *jsonrpc2.Error {
	var pe *paramError
	var re *jsonrpc2.Error
	var me *session.ModelError
	switch {
	case errors.As(err, &re):
		return re
	case errors.As(err, &pe):
		return &jsonrpc2.Error{Code: CodeInvalidParams, Message: pe.msg}
	case errors.Is(err, session.ErrNotFound):
		return &jsonrpc2.Error{Code: CodeNotFound, Message: err.Error()}
	case errors.Is(err, session.ErrInvalid):
		return &jsonrpc2.Error{Code: CodeInvalidParams, Message: err.Error()}
	case errors.Is(err, session.ErrBusy):
		return &jsonrpc2.Error{Code: CodeBusy, Message: err.Error()}
	case errors.Is(err, context.Canceled):
		// $/cancel_request ended it: ACP's answer to a cancelled request.
		return &jsonrpc2.Error{Code: CodeCancelled, Message: "request cancelled"}
	case errors.As(err, &me):
		code := int64(CodeInternal)
		if me.NeedsSetup {
			code = CodeAuthRequired
		}
		rpcErr := &jsonrpc2.Error{Code: code, Message: me.Message}
		rpcErr.SetError(map[string]any{"provider": me.Provider, "kind": me.Kind, "status": me.Status})
		return rpcErr
	}
	return &jsonrpc2.Error{Code: CodeInternal, Message: "internal error: " + err.Error()}
}
