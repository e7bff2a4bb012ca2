// Package lsp runs language servers for bridle's sessions, each confined
// in the box like a command (sandbox/box): it finds them (the "lsp"
// settings, config.Servers), starts one per workspace root and language
// on first need, shares it among the sessions of one process, speaks
// JSON-RPC to it within bounds (time per request, message size,
// diagnostics per file), restarts it after a crash, and stops it when
// idle. What it learns reaches the model through the edit tools: the
// diagnostics an edit introduced.
package lsp
