package provider

import (
	"encoding/json"
	"strings"
)

// ToolCall is a complete tool call assembled from deltas.
type ToolCall struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// Response is what a stream amounted to, complete or not.
type Response struct {
	Text       string
	Thinking   string
	Signature  string
	ToolCalls  []ToolCall
	StopReason StopReason
	Usage      Usage
}

// Collector assembles deltas into a Response. The zero value is ready.
// It keeps whatever arrived even if the stream breaks, so a cancelled or
// failed response still yields its partial text.
type Collector struct {
	text, thinking strings.Builder
	signature      string
	calls          []ToolCall
	args           []strings.Builder
	stop           StopReason
	usage          Usage
}

// Add folds d into the response.
func (c *Collector) Add(d Delta) {
	switch d.Kind {
	case DeltaText:
		c.text.WriteString(d.Text)
	case DeltaThinking:
		c.thinking.WriteString(d.Text)
		if d.Signature != "" {
			c.signature = d.Signature
		}
	case DeltaToolStart:
		c.grow(d.Index)
		c.calls[d.Index].ID = d.ToolCallID
		c.calls[d.Index].Name = d.ToolName
	case DeltaToolArgs:
		c.grow(d.Index)
		c.args[d.Index].WriteString(d.Text)
	case DeltaUsage:
		c.usage = d.Usage
	case DeltaStop:
		c.stop = d.StopReason
	}
}

func (c *Collector) grow(i int) {
	for len(c.calls) <= i {
		c.calls = append(c.calls, ToolCall{})
		c.args = append(c.args, strings.Builder{})
	}
}

// Response returns what has been collected so far. Tool calls whose
// arguments are not valid JSON keep them as a JSON string, so the model can
// be told what it sent.
func (c *Collector) Response() Response {
	r := Response{
		Text:       c.text.String(),
		Thinking:   c.thinking.String(),
		Signature:  c.signature,
		StopReason: c.stop,
		Usage:      c.usage,
	}
	for i, call := range c.calls {
		args := strings.TrimSpace(c.args[i].String())
		switch {
		case args == "":
			call.Input = json.RawMessage("{}")
		case json.Valid([]byte(args)):
			call.Input = json.RawMessage(args)
		default:
			quoted, _ := json.Marshal(args)
			call.Input = quoted
		}
		r.ToolCalls = append(r.ToolCalls, call)
	}
	return r
}
