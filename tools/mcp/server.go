package mcp

import (
	"fmt"
	"net/url"
	"strings"
)

// Transport kinds of a Server.
const (
	Stdio = "stdio"
	HTTP  = "http"
)

// Server is one MCP server an editor asked for (ACP's McpServer).
type Server struct {
	Name string
	// Type is Stdio (also when empty) or HTTP.
	Type string
	// Command, Args and Env start a stdio server.
	Command string
	Args    []string
	Env     []Var
	// URL and Headers reach an HTTP (streamable) server.
	URL     string
	Headers []Var
}

// Var is a name and a value: an environment variable or an HTTP header.
type Var struct{ Name, Value string }

func (s Server) transport() string {
	if s.Type == "" {
		return Stdio
	}
	return s.Type
}

// Check validates servers as an editor sent them. Its error names the
// entry and what to fix.
func Check(servers []Server) error {
	seen := map[string]string{}
	for i, s := range servers {
		if strings.TrimSpace(s.Name) == "" {
			return fmt.Errorf("mcpServers[%d].name is empty: give each server a name", i)
		}
		switch s.transport() {
		case Stdio:
			if strings.TrimSpace(s.Command) == "" {
				return fmt.Errorf("mcpServers[%d] (%q): command is empty: give the server's executable", i, s.Name)
			}
		case HTTP:
			u, err := url.Parse(s.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("mcpServers[%d] (%q): url %q is not an http(s) URL", i, s.Name, s.URL)
			}
		default:
			return fmt.Errorf("mcpServers[%d] (%q): type %q is not supported: bridle connects to stdio and http servers (mcpCapabilities.sse is false)", i, s.Name, s.Type)
		}
		id := sanitize(s.Name)
		if other, ok := seen[id]; ok {
			return fmt.Errorf("mcpServers[%d]: the names %q and %q both become %q in tool names: rename one", i, other, s.Name, id)
		}
		seen[id] = s.Name
	}
	return nil
}

// Same reports whether two server lists describe the same servers.
func Same(a, b []Server) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if fmt.Sprint(a[i]) != fmt.Sprint(b[i]) {
			return false
		}
	}
	return true
}

// maxName bounds a tool name: OpenAI's limit, the stricter of the
// providers bridle speaks to.
const maxName = 64

// sanitize keeps what tool names may hold everywhere: letters, digits,
// '_' and '-'.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// ToolName is the catalogue name of tool on server: mcp__SERVER__TOOL,
// shortened (with a hash of the whole, so names stay distinct) when it
// would exceed what providers accept.
func ToolName(server, tool string) string {
	name := "mcp__" + sanitize(server) + "__" + sanitize(tool)
	if len(name) <= maxName {
		return name
	}
	sum := fnv32(server + "\x00" + tool)
	return fmt.Sprintf("%s_%08x", name[:maxName-9], sum)
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// IsToolName reports whether name has the form of an MCP tool's name.
func IsToolName(name string) bool { return strings.HasPrefix(name, "mcp__") }
