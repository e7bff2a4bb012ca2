package event

import (
	"fmt"
	"strconv"
	"strings"
)

// A tool call's key names it for good: SESSION/SEQ/INDEX, the session,
// the seq of the assistant_message that made it and its index there. It
// indexes the call's start and result (idempotency) and tells MCP servers
// and subagents which call they serve.

// NewCallKey is the key of call i of the assistant_message at seq.
func NewCallKey(sessionID string, seq int64, i int) string {
	return fmt.Sprintf("%s/%d/%d", sessionID, seq, i)
}

// ParseCallKey returns the seq and index a key names.
func ParseCallKey(key string) (seq int64, i int, ok bool) {
	parts := strings.Split(key, "/")
	if len(parts) < 3 {
		return 0, 0, false
	}
	seq, err1 := strconv.ParseInt(parts[len(parts)-2], 10, 64)
	i, err2 := strconv.Atoi(parts[len(parts)-1])
	return seq, i, err1 == nil && err2 == nil
}

// ToolCallID is the id the editor knows a call by, derived from its key:
// the same on the first run and on every replay.
func ToolCallID(key string) string {
	parts := strings.Split(key, "/")
	if len(parts) < 3 {
		return key
	}
	return "call-" + parts[len(parts)-2] + "-" + parts[len(parts)-1]
}
