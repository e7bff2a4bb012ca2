// Package mcp connects a session to the MCP (Model Context Protocol)
// servers its editor names, with the official Go SDK, and offers their
// tools as tools.Tool values: the session's modes, approvals, output caps
// and redaction apply to them unchanged.
//
// A server's tools are named mcp__SERVER__TOOL in the catalogue. A tool
// annotated readOnlyHint is EffectRead (offered in read-only mode, run
// without approval, re-run after a crash); every other MCP tool is
// EffectExecute: bridle cannot see what it does, so it is treated as a
// command.
package mcp
