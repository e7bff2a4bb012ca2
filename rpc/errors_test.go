package rpc

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/bridle-dev/bridle/acp"
	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/session"
)

func TestUserErrorsMapToTheirCodes(t *testing.T) {
	for _, tt := range []struct {
		err  error
		code int64
	}{
		{fmt.Errorf("%w (ses_1): wait for it to finish", session.ErrBusy), CodeBusy},
		{fmt.Errorf("%w: it needs 9000 tokens", contextwin.ErrTooBig), CodeInvalidParams},
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
