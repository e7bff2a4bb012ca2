package acptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var (
	schemaOnce sync.Once
	compiler   *jsonschema.Compiler
	schemaErr  error
	schemas    sync.Map // ref → *jsonschema.Schema
)

const schemaURL = "https://agentclientprotocol.com/schema.json"

func schema(ref string) (*jsonschema.Schema, error) {
	schemaOnce.Do(func() {
		f, err := os.Open(filepath.Join(Root(), "testdata", "acp", "schema.json"))
		if err != nil {
			schemaErr = err
			return
		}
		defer f.Close()
		doc, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			schemaErr = err
			return
		}
		compiler = jsonschema.NewCompiler()
		schemaErr = compiler.AddResource(schemaURL, doc)
	})
	if schemaErr != nil {
		return nil, schemaErr
	}
	if s, ok := schemas.Load(ref); ok {
		return s.(*jsonschema.Schema), nil
	}
	s, err := compiler.Compile(schemaURL + ref)
	if err != nil {
		return nil, err
	}
	schemas.Store(ref, s)
	return s, nil
}

// responseDefs names the schema of each agent method's result.
var responseDefs = map[string]string{
	"initialize":                "InitializeResponse",
	"authenticate":              "AuthenticateResponse",
	"session/new":               "NewSessionResponse",
	"session/load":              "LoadSessionResponse",
	"session/resume":            "ResumeSessionResponse",
	"session/list":              "ListSessionsResponse",
	"session/close":             "CloseSessionResponse",
	"session/delete":            "DeleteSessionResponse",
	"session/set_mode":          "SetSessionModeResponse",
	"session/set_config_option": "SetSessionConfigOptionResponse",
	"session/prompt":            "PromptResponse",
}

// paramDefs names the schema of the params of each method bridle calls.
var paramDefs = map[string]string{
	"session/update":             "SessionNotification",
	"session/request_permission": "RequestPermissionRequest",
	"fs/read_text_file":          "ReadTextFileRequest",
	"fs/write_text_file":         "WriteTextFileRequest",
	// A protocol-level notification either side may send: bridle
	// abandons a question to the editor whose turn ended.
	"$/cancel_request": "CancelRequestNotification",
}

// Validate checks one message bridle wrote against the official ACP
// schema: the envelope against the agent side of the protocol, and the
// params or result against the specific type of its method.
func Validate(s Sent) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.Raw))
	if err != nil {
		return err
	}
	env, err := schema("#/anyOf/0") // "Agent": what an agent may send
	if err != nil {
		return err
	}
	if err := env.Validate(inst); err != nil {
		return fmt.Errorf("%s\n%v", s.Raw, err)
	}
	var m Msg
	json.Unmarshal(s.Raw, &m)
	def, part := "", json.RawMessage(nil)
	switch {
	case m.Method != "":
		if strings.HasPrefix(m.Method, "_") {
			return nil // extension notifications have no schema
		}
		def, part = paramDefs[m.Method], m.Params
		if def == "" {
			return fmt.Errorf("bridle sent %q, a method the ACP schema does not list for agents", m.Method)
		}
	case m.Error != nil:
		return nil // the envelope check covers errors
	default:
		def, part = responseDefs[s.Method], m.Result
		if def == "" {
			return nil // an extension method or LSP's shutdown
		}
	}
	sch, err := schema("#/$defs/" + def)
	if err != nil {
		return err
	}
	pinst, err := jsonschema.UnmarshalJSON(bytes.NewReader(part))
	if err != nil {
		return err
	}
	if err := sch.Validate(pinst); err != nil {
		return fmt.Errorf("%s does not match %s:\n%s\n%v", s.Method+m.Method, def, s.Raw, err)
	}
	return RoundTrip(def, part)
}

// AssertValid fails t for every message bridle wrote that the ACP schema
// rejects, and for any output that was not a protocol message.
func (a *Agent) AssertValid(t testing.TB) {
	t.Helper()
	if err := a.ReadErr(); err != nil {
		t.Errorf("stdout carried something other than protocol messages: %v", err)
	}
	sent := a.Sent()
	if len(sent) == 0 {
		t.Errorf("bridle sent nothing")
	}
	for _, s := range sent {
		if err := Validate(s); err != nil {
			t.Errorf("invalid ACP message: %v", err)
		}
	}
}
