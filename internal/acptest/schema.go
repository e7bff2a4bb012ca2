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

// The two vendored schemas: the unstable one, which package acp is
// generated from and which has session/fork, and the stable one, which a
// client that knows only the stable protocol reads bridle by.
const (
	unstableSchema = "schema.unstable.json"
	stableSchema   = "schema.json"
)

var (
	schemaOnce sync.Once
	compilers  map[string]*jsonschema.Compiler // by file
	defs       map[string]map[string]bool      // by file, the $defs it has
	schemaErr  error
	schemas    sync.Map // file+ref → *jsonschema.Schema
)

func schemaURL(file string) string { return "https://agentclientprotocol.com/" + file }

func loadSchemas() error {
	compilers, defs = map[string]*jsonschema.Compiler{}, map[string]map[string]bool{}
	for _, file := range []string{unstableSchema, stableSchema} {
		raw, err := os.ReadFile(filepath.Join(Root(), "testdata", "acp", file))
		if err != nil {
			return err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(schemaURL(file), doc); err != nil {
			return err
		}
		var names struct {
			Defs map[string]json.RawMessage `json:"$defs"`
		}
		if err := json.Unmarshal(raw, &names); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		defs[file] = map[string]bool{}
		for n := range names.Defs {
			defs[file][n] = true
		}
		compilers[file] = c
	}
	return nil
}

// schema compiles ref of one of the vendored schemas.
func schema(file, ref string) (*jsonschema.Schema, error) {
	schemaOnce.Do(func() { schemaErr = loadSchemas() })
	if schemaErr != nil {
		return nil, schemaErr
	}
	if s, ok := schemas.Load(file + ref); ok {
		return s.(*jsonschema.Schema), nil
	}
	s, err := compilers[file].Compile(schemaURL(file) + ref)
	if err != nil {
		return nil, err
	}
	schemas.Store(file+ref, s)
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
	"session/fork":              "ForkSessionResponse", // unstable schema only
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
// params or result against the specific type of its method. Both vendored
// schemas must accept it, the stable one too unless the type is one only
// the unstable schema has (session/fork's answer): a client that knows
// only the stable protocol reads everything else bridle writes.
func Validate(s Sent) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.Raw))
	if err != nil {
		return err
	}
	for _, file := range []string{unstableSchema, stableSchema} {
		env, err := schema(file, "#/anyOf/0") // "Agent": what an agent may send
		if err != nil {
			return err
		}
		if err := env.Validate(inst); err != nil {
			return fmt.Errorf("%s rejects\n%s\n%v", file, s.Raw, err)
		}
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
	pinst, err := jsonschema.UnmarshalJSON(bytes.NewReader(part))
	if err != nil {
		return err
	}
	for _, file := range []string{unstableSchema, stableSchema} {
		if file == stableSchema && !defs[file][def] {
			continue
		}
		sch, err := schema(file, "#/$defs/"+def)
		if err != nil {
			return err
		}
		if err := sch.Validate(pinst); err != nil {
			return fmt.Errorf("%s does not match %s of %s:\n%s\n%v", s.Method+m.Method, def, file, s.Raw, err)
		}
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

// CompileSchema compiles the JSON Schema in the repository file path
// (e.g. docs/headless.schema.json), which may refer to the vendored ACP
// schemas by their URLs (https://agentclientprotocol.com/schema.json#/$defs/...).
func CompileSchema(path string) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	for _, file := range []string{path, filepath.Join("testdata", "acp", unstableSchema), filepath.Join("testdata", "acp", stableSchema)} {
		raw, err := os.ReadFile(filepath.Join(Root(), file))
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		url := "file:///" + filepath.ToSlash(file)
		if file != path {
			url = schemaURL(filepath.Base(file))
		}
		if err := c.AddResource(url, doc); err != nil {
			return nil, err
		}
	}
	return c.Compile("file:///" + filepath.ToSlash(path))
}

// ValidateJSON checks one JSON document against a compiled schema.
func ValidateJSON(s *jsonschema.Schema, doc []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}
