// Package session runs the agent: turns, tool calls, approvals,
// cancellation and resumption, all recorded in the session's event log.
// It knows events and nothing about JSON-RPC; it reaches the editor
// through the Client interface.
package session
