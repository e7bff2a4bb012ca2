package session

import (
	"reflect"
	"testing"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/tools/mcp"
)

// The editor's mcpServers entries become the servers mcp starts, each
// kind with its name, address and variables; none given is not nil (a
// live session is given the empty set: its servers stop).
func TestMCPServersFromACP(t *testing.T) {
	got := mcpServers([]acp.MCPServer{
		{Stdio: &acp.MCPServerStdio{Name: "files", Command: "/bin/srv", Args: []string{"-v"},
			Env: []acp.EnvVariable{{Name: "API_KEY", Value: "k"}}}},
		{HTTP: &acp.MCPServerHTTP{Name: "web", URL: "http://127.0.0.1:1/mcp",
			Headers: []acp.HTTPHeader{{Name: "Authorization", Value: "Bearer t"}}}},
		{SSE: &acp.MCPServerSSE{Name: "old", URL: "http://127.0.0.1:2/sse"}},
	})
	want := []mcp.Server{
		{Name: "files", Command: "/bin/srv", Args: []string{"-v"}, Env: []mcp.Var{{Name: "API_KEY", Value: "k"}}},
		{Name: "web", Type: "http", URL: "http://127.0.0.1:1/mcp", Headers: []mcp.Var{{Name: "Authorization", Value: "Bearer t"}}},
		{Name: "old", Type: "sse", URL: "http://127.0.0.1:2/sse"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if s := mcpServers(nil); s == nil || len(s) != 0 {
		t.Errorf("mcpServers(nil) = %#v, want an empty set", s)
	}
}
