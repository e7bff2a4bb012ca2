package rpc

import "encoding/json"

// ACP v1 messages, as Go structs. Field names and optionality follow the
// official schema (testdata/acp/schema.json); tests validate every message
// bridle sends against it.

// ProtocolVersion is the ACP version bridle speaks.
const ProtocolVersion = 1

// Meta is ACP's extension point on every object.
type Meta map[string]any

type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

type InitializeRequest struct {
	ProtocolVersion    *int               `json:"protocolVersion"`
	ClientCapabilities ClientCapabilities `json:"clientCapabilities"`
	ClientInfo         *Implementation    `json:"clientInfo,omitempty"`
	Meta               Meta               `json:"_meta,omitempty"`
}

func (r *InitializeRequest) validate() error {
	if r.ProtocolVersion == nil {
		return missing("protocolVersion")
	}
	return nil
}

type ClientCapabilities struct {
	FS       FileSystemCapabilities `json:"fs"`
	Terminal bool                   `json:"terminal"`
	Meta     Meta                   `json:"_meta,omitempty"`
}

type FileSystemCapabilities struct {
	ReadTextFile  bool `json:"readTextFile"`
	WriteTextFile bool `json:"writeTextFile"`
}

type InitializeResponse struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentCapabilities AgentCapabilities `json:"agentCapabilities"`
	AuthMethods       []AuthMethod      `json:"authMethods"`
	AgentInfo         *Implementation   `json:"agentInfo,omitempty"`
}

type AgentCapabilities struct {
	LoadSession         bool                `json:"loadSession"`
	PromptCapabilities  PromptCapabilities  `json:"promptCapabilities"`
	MCPCapabilities     MCPCapabilities     `json:"mcpCapabilities"`
	SessionCapabilities SessionCapabilities `json:"sessionCapabilities"`
	Meta                Meta                `json:"_meta,omitempty"`
}

type PromptCapabilities struct {
	Image           bool `json:"image"`
	Audio           bool `json:"audio"`
	EmbeddedContext bool `json:"embeddedContext"`
}

type MCPCapabilities struct {
	HTTP bool `json:"http"`
	SSE  bool `json:"sse"`
}

// empty is ACP's "{} means supported" capability value.
type empty struct{}

type SessionCapabilities struct {
	List                  *empty `json:"list,omitempty"`
	Resume                *empty `json:"resume,omitempty"`
	Close                 *empty `json:"close,omitempty"`
	Delete                *empty `json:"delete,omitempty"`
	AdditionalDirectories *empty `json:"additionalDirectories,omitempty"`
}

type AuthMethod struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

type AuthenticateRequest struct {
	MethodID string `json:"methodId"`
}

func (r *AuthenticateRequest) validate() error {
	if r.MethodID == "" {
		return missing("methodId")
	}
	return nil
}

// MCPServer is a server the client wants the session connected to: stdio
// (no type), or "http" with a URL.
type MCPServer struct {
	Type    string        `json:"type,omitempty"`
	Name    string        `json:"name"`
	Command string        `json:"command,omitempty"`
	Args    []string      `json:"args,omitempty"`
	Env     []EnvVariable `json:"env,omitempty"`
	URL     string        `json:"url,omitempty"`
	Headers []HTTPHeader  `json:"headers,omitempty"`
}

type HTTPHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type EnvVariable struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type NewSessionRequest struct {
	Cwd                   string      `json:"cwd"`
	AdditionalDirectories []string    `json:"additionalDirectories,omitempty"`
	MCPServers            []MCPServer `json:"mcpServers"`
	Meta                  Meta        `json:"_meta,omitempty"`
}

func (r *NewSessionRequest) validate() error {
	if r.Cwd == "" {
		return missing("cwd")
	}
	return nil
}

type NewSessionResponse struct {
	SessionID     string                `json:"sessionId"`
	Modes         *SessionModeState     `json:"modes,omitempty"`
	ConfigOptions []SessionConfigOption `json:"configOptions,omitempty"`
	Meta          Meta                  `json:"_meta,omitempty"`
}

type LoadSessionRequest struct {
	SessionID             string      `json:"sessionId"`
	Cwd                   string      `json:"cwd"`
	AdditionalDirectories []string    `json:"additionalDirectories,omitempty"`
	MCPServers            []MCPServer `json:"mcpServers"`
}

func (r *LoadSessionRequest) validate() error {
	if r.SessionID == "" {
		return missing("sessionId")
	}
	return nil
}

// LoadSessionResponse answers session/load and session/resume.
type LoadSessionResponse struct {
	Modes         *SessionModeState     `json:"modes,omitempty"`
	ConfigOptions []SessionConfigOption `json:"configOptions,omitempty"`
}

type ListSessionsRequest struct {
	Cwd    *string `json:"cwd,omitempty"`
	Cursor *string `json:"cursor,omitempty"`
}

func (r *ListSessionsRequest) validate() error { return nil }

type ListSessionsResponse struct {
	Sessions   []SessionInfo `json:"sessions"`
	NextCursor *string       `json:"nextCursor,omitempty"`
}

type SessionInfo struct {
	SessionID             string   `json:"sessionId"`
	Cwd                   string   `json:"cwd"`
	AdditionalDirectories []string `json:"additionalDirectories,omitempty"`
	Title                 *string  `json:"title,omitempty"`
	UpdatedAt             *string  `json:"updatedAt,omitempty"`
	Meta                  Meta     `json:"_meta,omitempty"`
}

// SessionRequest is the params of the methods that only name a session:
// session/close, session/delete and the session/cancel notification.
type SessionRequest struct {
	SessionID string `json:"sessionId"`
}

func (r *SessionRequest) validate() error {
	if r.SessionID == "" {
		return missing("sessionId")
	}
	return nil
}

type SetSessionModeRequest struct {
	SessionID string `json:"sessionId"`
	ModeID    string `json:"modeId"`
}

func (r *SetSessionModeRequest) validate() error {
	if r.SessionID == "" {
		return missing("sessionId")
	}
	if r.ModeID == "" {
		return missing("modeId")
	}
	return nil
}

type SetSessionConfigOptionRequest struct {
	SessionID string          `json:"sessionId"`
	ConfigID  string          `json:"configId"`
	Value     json.RawMessage `json:"value"`
}

func (r *SetSessionConfigOptionRequest) validate() error {
	if r.SessionID == "" {
		return missing("sessionId")
	}
	if r.ConfigID == "" {
		return missing("configId")
	}
	if r.Value == nil {
		return missing("value")
	}
	return nil
}

type SetSessionConfigOptionResponse struct {
	ConfigOptions []SessionConfigOption `json:"configOptions"`
}

type SessionModeState struct {
	CurrentModeID  string        `json:"currentModeId"`
	AvailableModes []SessionMode `json:"availableModes"`
}

type SessionMode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// SessionConfigOption is a select option (the only kind bridle offers).
type SessionConfigOption struct {
	ID           string                      `json:"id"`
	Name         string                      `json:"name"`
	Description  string                      `json:"description,omitempty"`
	Category     string                      `json:"category,omitempty"`
	Type         string                      `json:"type"`
	CurrentValue string                      `json:"currentValue"`
	Options      []SessionConfigSelectOption `json:"options"`
}

type SessionConfigSelectOption struct {
	Value       string `json:"value"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

type PromptRequest struct {
	SessionID string         `json:"sessionId"`
	Prompt    []ContentBlock `json:"prompt"`
}

func (r *PromptRequest) validate() error {
	if r.SessionID == "" {
		return missing("sessionId")
	}
	if r.Prompt == nil {
		return missing("prompt")
	}
	for i, b := range r.Prompt {
		if b.Type == "" {
			return invalidField("prompt[%d].type", "is required (text, resource_link, resource, image or audio)", i)
		}
	}
	return nil
}

type PromptResponse struct {
	StopReason string `json:"stopReason"`
}

// ContentBlock is the union of ACP content blocks, discriminated by Type.
type ContentBlock struct {
	Type     string            `json:"type"`
	Text     string            `json:"text,omitempty"`
	URI      string            `json:"uri,omitempty"`
	Name     string            `json:"name,omitempty"`
	MimeType string            `json:"mimeType,omitempty"`
	Data     string            `json:"data,omitempty"`
	Resource *EmbeddedResource `json:"resource,omitempty"`
}

type EmbeddedResource struct {
	URI      string `json:"uri"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
}

// TextBlock is a text content block. Text is always present, even empty.
type TextBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type SessionNotification struct {
	SessionID string `json:"sessionId"`
	Update    any    `json:"update"`
}

type ContentChunk struct {
	SessionUpdate string    `json:"sessionUpdate"`
	Content       TextBlock `json:"content"`
}

type ToolCall struct {
	SessionUpdate string             `json:"sessionUpdate"`
	ToolCallID    string             `json:"toolCallId"`
	Title         string             `json:"title"`
	Kind          string             `json:"kind,omitempty"`
	Status        string             `json:"status,omitempty"`
	Content       []ToolCallContent  `json:"content,omitempty"`
	Locations     []ToolCallLocation `json:"locations,omitempty"`
	RawInput      json.RawMessage    `json:"rawInput,omitempty"`
}

type ToolCallUpdate struct {
	SessionUpdate string             `json:"sessionUpdate,omitempty"`
	ToolCallID    string             `json:"toolCallId"`
	Title         string             `json:"title,omitempty"`
	Kind          string             `json:"kind,omitempty"`
	Status        string             `json:"status,omitempty"`
	Content       []ToolCallContent  `json:"content,omitempty"`
	Locations     []ToolCallLocation `json:"locations,omitempty"`
	RawInput      json.RawMessage    `json:"rawInput,omitempty"`
}

// ToolCallContent is a content or diff item of a tool call.
type ToolCallContent struct {
	Type    string     `json:"type"`
	Content *TextBlock `json:"content,omitempty"`
	Path    string     `json:"path,omitempty"`
	OldText *string    `json:"oldText,omitempty"`
	NewText *string    `json:"newText,omitempty"`
}

type ToolCallLocation struct {
	Path string `json:"path"`
	Line *int   `json:"line,omitempty"`
}

type UsageUpdate struct {
	SessionUpdate string `json:"sessionUpdate"`
	Used          int    `json:"used"`
	Size          int    `json:"size"`
}

type CurrentModeUpdate struct {
	SessionUpdate string `json:"sessionUpdate"`
	CurrentModeID string `json:"currentModeId"`
}

type AvailableCommandsUpdate struct {
	SessionUpdate     string             `json:"sessionUpdate"`
	AvailableCommands []AvailableCommand `json:"availableCommands"`
}

type AvailableCommand struct {
	Name        string                 `json:"name"`
	Description string                 `json:"description"`
	Input       *AvailableCommandInput `json:"input,omitempty"`
}

type AvailableCommandInput struct {
	Hint string `json:"hint"`
}

type RequestPermissionRequest struct {
	SessionID string             `json:"sessionId"`
	ToolCall  ToolCallUpdate     `json:"toolCall"`
	Options   []PermissionOption `json:"options"`
}

type PermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

type RequestPermissionResponse struct {
	Outcome struct {
		Outcome  string `json:"outcome"`
		OptionID string `json:"optionId"`
	} `json:"outcome"`
}

// CancelRequestParams is ACP's $/cancel_request.
type CancelRequestParams struct {
	RequestID json.RawMessage `json:"requestId"`
}
