// Command lspserver is a small language server for bridle's tests. Its
// diagnostics are written in the files it is given: a line holding
// "BAD: words" is an error saying words, "WARN: words" a warning. -mode
// makes it misbehave in one way, so a test can see bridle cope; -escape
// has it try to get out of its box first and publish what it managed.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	mode   = flag.String("mode", "", "misbehave: crash-start, crash-mid-request, hang, deaf, huge, flood, wrong-versions")
	pull   = flag.Bool("pull", false, "answer textDocument/diagnostic (pulled diagnostics) instead of publishing")
	escape = flag.String("escape", "", "try to get out of the box first: the host port to reach (and $HOME/.ssh, the workspace, forks)")
	gate   = flag.String("gate", "", "publish nothing until this file exists")
	// renameAlso makes a hostile rename: its WorkspaceEdit also changes
	// this file (outside the workspace, or hidden).
	renameAlso = flag.String("rename-also", "", "textDocument/rename also edits this file")
)

type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
}

var (
	out   = bufio.NewWriter(os.Stdout)
	outMu sync.Mutex
	// texts are the documents' texts, by URI; versions their versions.
	texts    = map[string]string{}
	versions = map[string]int{}
	// escaped is what -escape found, published with the first document.
	escaped []string
	changes int
)

func send(v any) {
	data, _ := json.Marshal(v)
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Fprintf(out, "Content-Length: %d\r\n\r\n", len(data))
	out.Write(data)
	out.Flush()
}

// sendRaw writes a body of n bytes made of a JSON message whose string
// member pads it, never holding it whole.
func sendHuge(prefix string, n int, suffix string) {
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Fprintf(out, "Content-Length: %d\r\n\r\n%s", len(prefix)+n+len(suffix), prefix)
	chunk := strings.Repeat("x", 1<<20)
	for left := n; left > 0; left -= len(chunk) {
		out.WriteString(chunk[:min(left, len(chunk))])
	}
	out.WriteString(suffix)
	out.Flush()
}

func main() {
	flag.Parse()
	if *mode == "crash-start" {
		fmt.Fprintln(os.Stderr, "lspserver: crashing at start, as asked")
		os.Exit(2)
	}
	if *escape != "" {
		escaped = tryEscape(*escape)
	}
	in := bufio.NewReader(os.Stdin)
	for {
		msg, err := read(in)
		if err != nil {
			os.Exit(0)
		}
		handle(msg)
	}
}

func read(in *bufio.Reader) (message, error) {
	n := -1
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return message{}, err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length:"); ok {
			n, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(in, body); err != nil {
		return message{}, err
	}
	var m message
	err := json.Unmarshal(body, &m)
	return m, err
}

func reply(id json.RawMessage, result any) {
	send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func handle(m message) {
	switch m.Method {
	case "initialize":
		caps := map[string]any{"textDocumentSync": 1}
		if *pull {
			caps["diagnosticProvider"] = map[string]any{"interFileDependencies": false, "workspaceDiagnostics": false}
		}
		reply(m.ID, map[string]any{"capabilities": caps, "serverInfo": map[string]string{"name": "lspserver"}})
		return
	case "initialized":
		if *mode == "deaf" {
			// Reads nothing more: bridle's writes fill the pipe.
			select {}
		}
		return
	case "shutdown":
		reply(m.ID, nil)
		return
	case "exit":
		os.Exit(0)
	}
	if *mode == "hang" {
		return // reads on, answers nothing
	}
	switch m.Method {
	case "textDocument/didOpen":
		var p struct {
			TextDocument struct {
				URI     string `json:"uri"`
				Version int    `json:"version"`
				Text    string `json:"text"`
			} `json:"textDocument"`
		}
		json.Unmarshal(m.Params, &p)
		texts[p.TextDocument.URI], versions[p.TextDocument.URI] = p.TextDocument.Text, p.TextDocument.Version
		changed(p.TextDocument.URI)
	case "textDocument/didChange":
		var p struct {
			TextDocument struct {
				URI     string `json:"uri"`
				Version int    `json:"version"`
			} `json:"textDocument"`
			ContentChanges []struct {
				Text string `json:"text"`
			} `json:"contentChanges"`
		}
		json.Unmarshal(m.Params, &p)
		if len(p.ContentChanges) > 0 {
			texts[p.TextDocument.URI] = p.ContentChanges[len(p.ContentChanges)-1].Text
		}
		versions[p.TextDocument.URI] = p.TextDocument.Version
		changes++
		changed(p.TextDocument.URI)
	case "textDocument/diagnostic":
		var p struct {
			TextDocument struct {
				URI string `json:"uri"`
			} `json:"textDocument"`
		}
		json.Unmarshal(m.Params, &p)
		if *mode == "crash-mid-request" && changes > 0 {
			fmt.Fprintln(os.Stderr, "panic: lspserver crashing mid-request, as asked")
			os.Exit(3)
		}
		if *mode == "huge" && changes > 0 {
			// A 100 MB answer: bridle cuts it off and the request fails.
			sendHuge(`{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"kind":"full","items":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}},"message":"`, 100<<20, `"}]}}`)
			return
		}
		reply(m.ID, map[string]any{"kind": "full", "items": diagnose(p.TextDocument.URI)})
	case "textDocument/rename":
		var p struct {
			TextDocument struct {
				URI string `json:"uri"`
			} `json:"textDocument"`
			Position struct {
				Line      int `json:"line"`
				Character int `json:"character"`
			} `json:"position"`
			NewName string `json:"newName"`
		}
		json.Unmarshal(m.Params, &p)
		at := map[string]any{"line": p.Position.Line, "character": p.Position.Character}
		edit := []any{map[string]any{"range": map[string]any{"start": at, "end": at}, "newText": p.NewName}}
		changes := map[string]any{p.TextDocument.URI: edit}
		if *renameAlso != "" {
			changes["file://"+*renameAlso] = edit
		}
		reply(m.ID, map[string]any{"changes": changes})
	default:
		if len(m.ID) > 0 && m.Method != "" {
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "not handled"}})
		}
	}
}

// changed publishes a document's diagnostics (unless they are pulled),
// as -mode says.
func changed(uri string) {
	if *pull {
		return
	}
	for *gate != "" {
		if _, err := os.Stat(*gate); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	v := versions[uri]
	switch *mode {
	case "crash-mid-request":
		if changes > 0 {
			fmt.Fprintln(os.Stderr, "panic: lspserver crashing mid-change, as asked")
			os.Exit(3)
		}
	case "huge":
		if changes > 0 {
			// A 100 MB notification, then the real one.
			sendHuge(`{"jsonrpc":"2.0","method":"window/logMessage","params":{"type":3,"message":"`, 100<<20, `"}}`)
		}
	case "flood":
		if changes > 0 {
			// URIs that are no file's, diagnostics for thousands of files,
			// and thousands for this one.
			for _, bad := range []string{"http://evil.example/x.go", "", "file://%zz", "untitled:Untitled-1", "file:relative.go"} {
				send(publication(bad, 0, []any{diagnostic(0, 1, "not a file")}))
			}
			for i := range 20000 {
				send(publication(fmt.Sprintf("file:///flood/f%d.go", i), 0, []any{diagnostic(0, 1, "flooded")}))
			}
			var many []any
			for i := range 100000 {
				many = append(many, diagnostic(i%50, 1, fmt.Sprintf("flood %d", i)))
			}
			send(publication(uri, v, many))
			return
		}
	case "wrong-versions":
		if changes > 0 {
			// For a version bridle never sent, then none for the one it did.
			send(publication(uri, v+100, []any{diagnostic(0, 1, "for a version never sent")}))
			return
		}
	}
	send(publication(uri, v, diagnose(uri)))
}

func publication(uri string, version int, items []any) map[string]any {
	p := map[string]any{"uri": uri, "diagnostics": items}
	if version > 0 {
		p["version"] = version
	}
	return map[string]any{"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": p}
}

func diagnostic(line, severity int, msg string) map[string]any {
	return map[string]any{"range": map[string]any{"start": map[string]int{"line": line, "character": 0}, "end": map[string]int{"line": line, "character": 1}},
		"severity": severity, "source": "lspserver", "message": msg}
}

// diagnose reads a document's BAD: and WARN: lines, and, the first time,
// what -escape found.
func diagnose(uri string) []any {
	items := []any{}
	for i, line := range strings.Split(texts[uri], "\n") {
		if _, msg, ok := strings.Cut(line, "BAD: "); ok {
			items = append(items, diagnostic(i, 1, strings.TrimSpace(msg)))
		}
		if _, msg, ok := strings.Cut(line, "WARN: "); ok {
			items = append(items, diagnostic(i, 2, strings.TrimSpace(msg)))
		}
	}
	if changes > 0 {
		for _, e := range escaped {
			items = append(items, diagnostic(0, 1, "escape: "+e))
		}
	}
	return items
}

// tryEscape tries what a hostile server would, and says how each went.
func tryEscape(port string) []string {
	var out []string
	wd, _ := os.Getwd()
	err := os.WriteFile(filepath.Join(wd, "pwned.txt"), []byte("pwned"), 0o644)
	out = append(out, fmt.Sprintf("write workspace: %v", errWord(err)))
	home, _ := os.UserHomeDir()
	data, err := os.ReadFile(filepath.Join(home, ".ssh", "id_ed25519"))
	out = append(out, fmt.Sprintf("read ~/.ssh: %q %v", data, errWord(err)))
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 2*time.Second)
	if c != nil {
		c.Close()
	}
	out = append(out, fmt.Sprintf("reach host port: %v", errWord(err)))
	forks := 0
	for range 300 {
		cmd := exec.Command("/bin/sleep", "1000")
		if cmd.Start() != nil {
			break
		}
		forks++
	}
	out = append(out, fmt.Sprintf("forks=%d", forks))
	return out
}

func errWord(err error) string {
	if err == nil {
		return "OK"
	}
	return "refused (" + err.Error() + ")"
}
