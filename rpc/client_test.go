package rpc

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/bridle-dev/bridle/acp"
)

// A session/update encoded once is the message jsonrpc2's Notify writes.
func TestUpdateMessageIsWhatNotifyWrites(t *testing.T) {
	text := "quotes \" and <tags> & \u2028 and \x01 and ünïcode"
	kind, status := acp.ToolKindRead, acp.ToolCallStatusCompleted
	title := "read " + text
	for _, u := range []acp.SessionUpdate{
		{AgentMessageChunk: &acp.ContentChunk{Content: acp.ContentBlock{Text: &acp.TextContent{Text: text}}}},
		{ToolCall: &acp.ToolCall{ToolCallID: "call-3-0", Title: title, Kind: &kind, Status: &status,
			Locations: []acp.ToolCallLocation{{Path: "/w/a.go"}}}},
		{UsageUpdate: &acp.UsageUpdate{Used: 1200, Size: 200000}},
	} {
		got, err := updateMessage("ses_x", u)
		if err != nil {
			t.Fatal(err)
		}
		req := &jsonrpc2.Request{Method: acp.MethodSessionUpdate, Notif: true}
		if err := req.SetParams(acp.SessionNotification{SessionID: "ses_x", Update: u}); err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s is not JSON: %v", got, err)
		}
		json.Unmarshal(want, &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("wrote %s\nNotify writes %s", got, want)
		}
	}
}
