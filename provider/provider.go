// Package provider defines how bridle talks to a language model: one
// request built from the session log, one stream of deltas back.
//
// The types here are provider-neutral. Each client (anthropic, openai,
// scripted) maps them to its own wire format, so the session loop and the
// context window never see an API's JSON.
package provider

import (
	"context"
	"encoding/json"
	"iter"
)

// Role says who spoke a message.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// PartKind is the kind of one piece of a message.
type PartKind string

const (
	PartText       PartKind = "text"
	PartThinking   PartKind = "thinking"
	PartToolUse    PartKind = "tool_use"
	PartToolResult PartKind = "tool_result"
	PartImage      PartKind = "image"
)

// Part is one piece of a message. Which fields are set depends on Kind.
type Part struct {
	Kind PartKind `json:"kind"`
	// Text is the text of a text or thinking part, or a tool result's content.
	Text string `json:"text,omitempty"`
	// Signature authenticates a thinking part when it is sent back (Anthropic).
	Signature string `json:"signature,omitempty"`
	// ToolCallID links a tool_use part to its tool_result part.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// ToolName and Input describe a tool_use part.
	ToolName string          `json:"tool_name,omitempty"`
	Input    json.RawMessage `json:"input,omitempty"`
	// IsError marks a tool result that reports a failure.
	IsError bool `json:"is_error,omitempty"`
	// An image part has its MimeType and its bytes in Data; Ref names
	// the stored image until the session loads it into Data.
	MimeType string `json:"mime_type,omitempty"`
	Data     []byte `json:"data,omitempty"`
	Ref      string `json:"ref,omitempty"`
}

// Message is one turn of the conversation as the model sees it. Tool
// results travel in user messages, as in the Anthropic API; clients for
// APIs with a separate tool role split them out.
type Message struct {
	Role  Role   `json:"role"`
	Parts []Part `json:"parts"`
	// Cache marks a prompt-cache breakpoint after this message: everything
	// up to and including it is the stable prefix contextwin vouches for.
	Cache bool `json:"cache,omitempty"`
}

// Text returns the concatenated text parts of m.
func (m Message) Text() string {
	var s string
	for _, p := range m.Parts {
		if p.Kind == PartText {
			s += p.Text
		}
	}
	return s
}

// SystemBlock is one block of system instructions.
type SystemBlock struct {
	Text string `json:"text"`
	// Cache marks a prompt-cache breakpoint after this block.
	Cache bool `json:"cache,omitempty"`
}

// Tool is one entry of the tool catalogue sent to the model.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Request is everything one model call needs. It is rebuilt from the log for
// every call and thrown away afterwards.
type Request struct {
	// Model is the model id without the provider prefix ("claude-sonnet-4-5").
	Model  string        `json:"model"`
	System []SystemBlock `json:"system,omitempty"`
	Tools  []Tool        `json:"tools,omitempty"`
	// CacheTools marks a prompt-cache breakpoint after the tool catalogue.
	CacheTools bool      `json:"cache_tools,omitempty"`
	Messages   []Message `json:"messages"`
	MaxTokens  int       `json:"max_tokens,omitempty"`
}

// DeltaKind is the kind of one streamed event.
type DeltaKind int

const (
	// DeltaText carries a fragment of the answer in Text.
	DeltaText DeltaKind = iota + 1
	// DeltaThinking carries a fragment of reasoning in Text, and possibly
	// the block's Signature.
	DeltaThinking
	// DeltaToolStart opens tool call Index with ToolCallID and ToolName.
	DeltaToolStart
	// DeltaToolArgs carries a fragment of tool call Index's JSON arguments.
	DeltaToolArgs
	// DeltaToolEnd closes tool call Index.
	DeltaToolEnd
	// DeltaUsage reports token usage so far (cumulative, not incremental).
	DeltaUsage
	// DeltaStop ends the response with StopReason.
	DeltaStop
)

// StopReason says why the model stopped.
type StopReason string

const (
	StopEndTurn   StopReason = "end_turn"
	StopToolUse   StopReason = "tool_use"
	StopMaxTokens StopReason = "max_tokens"
	StopRefusal   StopReason = "refusal"
)

// Usage counts tokens of one model call.
type Usage struct {
	InputTokens      int `json:"input_tokens,omitempty"`
	OutputTokens     int `json:"output_tokens,omitempty"`
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

// Delta is one event of a streamed response.
type Delta struct {
	Kind       DeltaKind
	Text       string
	Signature  string
	Index      int
	ToolCallID string
	ToolName   string
	Usage      Usage
	StopReason StopReason
}

// Provider is a model client.
//
// Stream sends req and yields the response as it arrives. Errors, including
// a failure to connect, are yielded as the second value, after which the
// sequence ends. Cancelling ctx closes the connection at once.
type Provider interface {
	Name() string
	Stream(ctx context.Context, req Request) iter.Seq2[Delta, error]
}
