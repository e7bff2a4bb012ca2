// Command mcpserver is a small MCP server for bridle's tests. It speaks
// stdio (the default) or streamable HTTP (-http), and offers tools that
// let a test see what bridle sends and how it copes with a server that
// misbehaves. It exits when its stdin closes.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	fail := flag.String("fail", "", "print this to stderr and exit 2 before the handshake")
	metaLog := flag.String("meta", "", "append each call's tool name and _meta as a JSON line to this file")
	httpMode := flag.Bool("http", false, "serve streamable HTTP on 127.0.0.1; print the URL on stdout")
	flag.String("tag", "", "ignored: lets a test find this process by its command line")
	flag.Parse()
	if *fail != "" {
		fmt.Fprintln(os.Stderr, *fail)
		os.Exit(2)
	}
	s := newServer(*metaLog)
	if *httpMode {
		serveHTTP(s)
		return
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
}

var logMu sync.Mutex

// record appends what a call carried to the meta log.
func record(path, tool string, req *mcp.CallToolRequest, extra string) {
	if path == "" {
		return
	}
	logMu.Lock()
	defer logMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	b, _ := json.Marshal(map[string]any{"tool": tool, "meta": req.Params.Meta, "event": extra})
	fmt.Fprintf(f, "%s\n", b)
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func newServer(metaLog string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bridle-test-server", Version: "1"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}

	type echoIn struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back.", Annotations: ro},
		func(_ context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			record(metaLog, "echo", req, "")
			return text("echo: " + in.Text), nil, nil
		})

	type noteIn struct {
		Name string `json:"name"`
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "write_note", Description: "Write a note file in the server's working directory."},
		func(_ context.Context, req *mcp.CallToolRequest, in noteIn) (*mcp.CallToolResult, any, error) {
			record(metaLog, "write_note", req, "")
			if err := os.WriteFile(filepath.Base(in.Name), []byte(in.Text), 0o644); err != nil {
				return nil, nil, err
			}
			return text("wrote " + in.Name), nil, nil
		})

	// deploy takes secrets that only their keys mark; it answers with
	// their lengths, so a test can tell it got them as the model wrote
	// them without their reaching its output.
	type deployIn struct {
		Command  string            `json:"command"`
		Env      map[string]string `json:"env,omitempty"`
		Password string            `json:"password,omitempty"`
		Tokens   []string          `json:"tokens,omitempty"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "deploy", Description: "Deploy with the given environment."},
		func(_ context.Context, req *mcp.CallToolRequest, in deployIn) (*mcp.CallToolResult, any, error) {
			record(metaLog, "deploy", req, "")
			names := slices.Sorted(maps.Keys(in.Env))
			var b strings.Builder
			fmt.Fprintf(&b, "deployed with %s:", in.Command)
			for _, k := range names {
				fmt.Fprintf(&b, " %s has %d characters;", k, len(in.Env[k]))
			}
			fmt.Fprintf(&b, " the password has %d;", len(in.Password))
			for i, t := range in.Tokens {
				fmt.Fprintf(&b, " token %d has %d;", i, len(t))
			}
			return text(b.String()), nil, nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "secret", Description: "Show the server's secret.", Annotations: ro},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			record(metaLog, "secret", req, "")
			return text("the token is " + os.Getenv("MCP_TEST_TOKEN") + "; bridle's is " + os.Getenv("BRIDLE_TEST_API_KEY")), nil, nil
		})

	type bigIn struct {
		Lines int `json:"lines"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Print many lines.", Annotations: ro},
		func(_ context.Context, req *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
			record(metaLog, "big", req, "")
			var b strings.Builder
			for i := range in.Lines {
				fmt.Fprintf(&b, "line %d\n", i+1)
			}
			return text(b.String()), nil, nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exit the server in the middle of the call."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			record(metaLog, "crash", req, "")
			fmt.Fprintln(os.Stderr, "mcpserver: crashing on purpose")
			os.Exit(3)
			return nil, nil, nil
		})

	type sleepIn struct {
		Ms int `json:"ms"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "Wait, or until cancelled.", Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
			record(metaLog, "sleep", req, "started")
			select {
			case <-time.After(time.Duration(in.Ms) * time.Millisecond):
				return text("slept"), nil, nil
			case <-ctx.Done():
				record(metaLog, "sleep", req, "cancelled")
				return nil, nil, ctx.Err()
			}
		})

	mcp.AddTool(s, &mcp.Tool{Name: "spawn", Description: "Start a long-lived child process."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			record(metaLog, "spawn", req, "")
			cmd := exec.Command("sleep", "300")
			cmd.Stderr = os.Stderr // held open after the server exits, as real servers' children do
			if err := cmd.Start(); err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("started %d", cmd.Process.Pid)), nil, nil
		})
	return s
}

// serveHTTP serves streamable HTTP on a loopback port until stdin closes.
func serveHTTP(s *mcp.Server) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Auth") != os.Getenv("MCP_TEST_HEADER") {
			http.Error(w, "missing X-Test-Auth", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	go http.Serve(ln, mux)
	// Stop by itself when the test lets go of it.
	buf := make([]byte, 1)
	for {
		if _, err := os.Stdin.Read(buf); err != nil {
			return
		}
	}
}
