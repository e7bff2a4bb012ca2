// Package rpc speaks ACP (the Agent Client Protocol) over JSON-RPC on
// stdio. It knows the protocol and nothing about SQLite: each method maps
// to a call on session.Manager, and the server is the session.Client
// through which sessions reach the editor. Of models it knows only what
// session reports of their failures (session.ModelError), to give each
// its JSON-RPC code.
package rpc
