package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MaxPrompt bounds a session/prompt message. No model's context window
// holds a prompt this large (a million-token window is about 4 MB of
// text), so a larger one is refused while it is read: without holding it
// or decoding it, in the time it takes to read it off the pipe. Smaller
// prompts that still do not fit are refused by the session, which knows
// the model's window.
const MaxPrompt = 16 << 20

// headProbe is how much of a message's start is read for its method and id.
const headProbe = 64 << 10

// frameHead reads the top-level "method" and "id" of the JSON object that
// prefix starts, as far as prefix goes (both usually come before "params").
func frameHead(prefix []byte) (method string, id any) {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", nil
	}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return method, id
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return method, id // a value longer than the prefix: params
		}
		switch key {
		case "method":
			method, _ = v.(string)
		case "id":
			switch n := v.(type) {
			case string:
				id = n
			case json.Number:
				if i, err := n.Int64(); err == nil && i >= 0 {
					id = i
				}
			}
		}
		if method != "" && id != nil {
			return method, id
		}
	}
	return method, id
}

// promptTooLarge answers a prompt over MaxPrompt, as the session answers
// one that does not fit the window: invalid params, saying how large it
// is and how to attach large content.
func promptTooLarge(id any, size int) *frameError {
	return &frameError{code: CodeInvalidParams, id: id, msg: fmt.Sprintf(
		"invalid params: \"prompt\" is too large: the message is %.1f MB, over the %d MiB that bridle reads of a prompt, "+
			"and no model's context window holds that much. It was not read or recorded; the session is unchanged. "+
			"Put large content in a file in the workspace (the agent reads it with read_file) or attach it as a resource_link.",
		float64(size)/1e6, MaxPrompt>>20)}
}
