package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bridle-dev/bridle/permission"
	"github.com/bridle-dev/bridle/tools"
)

// KeyMeta is the _meta key under which each call carries its idempotency
// key (session/seq/index): the same on every replay of the call, so a
// server that keeps state can tell a repeat from a new request.
const KeyMeta = "dev.bridle/idempotencyKey"

// Tool is one tool of an MCP server, as a tools.Tool.
type Tool struct {
	c        *conn
	name     string // mcp__server__tool
	remote   string // the server's name for it
	title    string
	desc     string
	schema   json.RawMessage
	readOnly bool
}

func newTool(c *conn, t *sdk.Tool) *Tool {
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	if title == "" {
		title = t.Name
	}
	desc := strings.TrimSpace(t.Description)
	if desc == "" {
		desc = title
	}
	return &Tool{
		c: c, name: ToolName(c.spec.Name, t.Name), remote: t.Name, title: title,
		desc:     fmt.Sprintf("%s (tool %q of the MCP server %q)", desc, t.Name, c.spec.Name),
		schema:   inputSchema(t.InputSchema),
		readOnly: t.Annotations != nil && t.Annotations.ReadOnlyHint,
	}
}

// inputSchema is the server's schema as JSON; an object schema stands in
// for one that is missing or not an object, so providers accept the tool.
func inputSchema(s any) json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil || s == nil {
		return json.RawMessage(`{"type":"object"}`)
	}
	var probe struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(b, &probe) != nil || probe.Type != "object" {
		return json.RawMessage(`{"type":"object"}`)
	}
	return b
}

func (t *Tool) Name() string            { return t.name }
func (t *Tool) Description() string     { return t.desc }
func (t *Tool) Schema() json.RawMessage { return t.schema }

// Server returns the name of the tool's server.
func (t *Tool) Server() string { return t.c.spec.Name }

// ReadOnly reports whether the server annotated the tool readOnlyHint.
func (t *Tool) ReadOnly() bool { return t.readOnly }

// Kind is read for read-only tools, other for the rest: bridle cannot say
// more about what a server's tool does.
func (t *Tool) Kind() tools.Kind {
	if t.readOnly {
		return tools.KindRead
	}
	return tools.KindOther
}

// Effect trusts readOnlyHint; any other tool may change anything, so it is
// treated as a command: asked for unless in full-auto, absent from
// read-only mode, and "outcome unknown" when a crash cuts it short.
func (t *Tool) Effect() permission.Effect {
	if t.readOnly {
		return permission.EffectRead
	}
	return permission.EffectExecute
}

// Preview titles the call with its server; there are no paths or command
// to show, so a session-wide approval covers every call of the tool.
func (t *Tool) Preview(context.Context, *tools.Env, json.RawMessage) (tools.Preview, error) {
	return tools.Preview{Title: fmt.Sprintf("%s (MCP %s)", t.title, t.c.spec.Name)}, nil
}

// Run calls the tool, with the call's idempotency key in _meta, and caps
// and redacts what it returns.
func (t *Tool) Run(ctx context.Context, env *tools.Env, input json.RawMessage) tools.Result {
	cs, err := t.c.session()
	if err != nil {
		return tools.Errorf("%s: %v", t.name, err)
	}
	args := json.RawMessage(`{}`)
	if len(strings.TrimSpace(string(input))) > 0 {
		args = input
	}
	ctx, cancel := context.WithTimeout(ctx, t.c.set.opts.CallTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: t.remote, Arguments: args, Meta: sdk.Meta{KeyMeta: env.Key}})
	if err != nil {
		switch {
		case ctx.Err() == context.DeadlineExceeded:
			return tools.Errorf("%s: no answer within %s; the call was abandoned", t.name, t.c.set.opts.CallTimeout)
		case ctx.Err() != nil:
			return tools.Errorf("%s: cancelled", t.name)
		case errors.Is(err, sdk.ErrConnectionClosed), errors.Is(err, io.EOF):
			why := "stopped"
			if err := t.c.deadErr(); err != nil {
				why = err.Error()
			}
			return tools.Errorf("%s: the call was cut short, so whether it took effect is unknown: MCP server %q %s", t.name, t.c.spec.Name, why)
		}
		return tools.Errorf("%s: MCP server %q answered with an error: %v", t.name, t.c.spec.Name, err)
	}
	out := tools.CapOutput(env, t.c.set.opts.Caps, render(res))
	out.IsError = res.IsError
	return out
}

// render turns a call's result into the text the model reads: text as it
// is, other content described in a line, structured content as JSON when
// there is nothing else.
func render(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch v := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, v.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes, not shown]", v.MIMEType, len(v.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes, not shown]", v.MIMEType, len(v.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s: %s]", v.Name, v.URI))
		case *sdk.EmbeddedResource:
			r := v.Resource
			switch {
			case r == nil:
			case r.Text != "":
				parts = append(parts, fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
			default:
				parts = append(parts, fmt.Sprintf("[resource %s %s, %d bytes, not shown]", r.URI, r.MIMEType, len(r.Blob)))
			}
		default:
			b, _ := json.Marshal(c)
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		parts = append(parts, string(b))
	}
	return strings.Join(parts, "\n")
}
