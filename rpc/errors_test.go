package rpc

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/session"
)

func TestUserErrorsMapToTheirCodes(t *testing.T) {
	for _, tt := range []struct {
		err  error
		code int64
	}{
		{fmt.Errorf("%w (ses_1): wait for it to finish", session.ErrBusy), CodeBusy},
		{fmt.Errorf("%w: it needs 9000 tokens", session.ErrPromptTooLarge), CodeInvalidParams},
		{fmt.Errorf("x: %w", session.ErrNotFound), CodeNotFound},
		{fmt.Errorf("disk on fire"), CodeInternal},
	} {
		if got := toRPCError(tt.err); got.Code != tt.code || got.Message == "" {
			t.Errorf("%v → %d %q, want %d", tt.err, got.Code, got.Message, tt.code)
		}
	}
}

func TestDecodeRefusesAMetaThatIsNotAnObject(t *testing.T) {
	for raw, ok := range map[string]bool{
		`{"_meta":5}`:                    false,
		`{"_meta":"x"}`:                  false,
		`{"_meta":[]}`:                   false,
		`{"_meta":null}`:                 true,
		`{"_meta":{"a":1}}`:              true,
		`{"cwd":"/x","note":"_meta: 5"}`: true,
	} {
		msg := json.RawMessage(raw)
		var p acp.ListSessionsRequest
		err := decode(&msg, &p)
		if (err == nil) != ok {
			t.Errorf("%s: err = %v", raw, err)
		}
	}
}

// A provider's failure comes from session as a ModelError: the prompt is
// answered with the provider's words, -32000 when the settings must
// change, and the provider, kind and status as the error's data.
func TestModelErrorsMapToTheirCodes(t *testing.T) {
	for _, tt := range []struct {
		err  session.ModelError
		code int64
		data string
	}{
		{session.ModelError{Provider: "anthropic", Kind: "auth", Status: 401, Message: "anthropic (HTTP 401): invalid x-api-key", NeedsSetup: true},
			CodeAuthRequired, `{"kind":"auth","provider":"anthropic","status":401}`},
		{session.ModelError{Provider: "openai", Kind: "rate_limited", Status: 429, Message: "openai (HTTP 429): slow down"},
			CodeInternal, `{"kind":"rate_limited","provider":"openai","status":429}`},
	} {
		got := toRPCError(fmt.Errorf("the turn: %w", &tt.err))
		if got.Code != tt.code || got.Message != tt.err.Message || got.Data == nil || string(*got.Data) != tt.data {
			var data string
			if got.Data != nil {
				data = string(*got.Data)
			}
			t.Errorf("%+v → %d %q %s, want %d %q %s", tt.err, got.Code, got.Message, data, tt.code, tt.err.Message, tt.data)
		}
	}
}
