// Package tools is what the model can call: each built-in tool (one file
// and its description in a .md beside it), the registry of the tools
// each mode offers, output caps with spill to artifacts, the editor's
// buffers as the file tools read and write them, and the redaction of
// what tools return. The confinement they work in is elsewhere: the
// workspace's Root and its hidden paths in sandbox/confine, confined
// processes in sandbox/box, the secrets' patterns in redact.
package tools
