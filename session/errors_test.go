package session

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/bridle-dev/bridle/contextwin"
	"github.com/bridle-dev/bridle/provider"
)

// A turn's error reaches the caller classified: a request too big for
// the window as the caller's input, a provider's failure as a
// ModelError; its words are kept, and so is what it wraps.
func TestTurnErrorsAreReportedByKind(t *testing.T) {
	auth := &provider.Error{Provider: "anthropic", Kind: provider.ErrAuth, Status: 401, Message: "invalid x-api-key"}
	unset := &provider.Error{Provider: "none", Kind: provider.ErrNotConfigured, Message: "no model provider is configured"}
	limited := &provider.Error{Provider: "openai", Kind: provider.ErrRateLimited, Status: 429, Message: "slow down"}
	busy := fmt.Errorf("%w (ses_1): wait for it to finish", ErrBusy)
	for _, tt := range []struct {
		name    string
		err     error
		invalid bool
		model   *ModelError // the fields but err
	}{
		{"too big", fmt.Errorf("%w: it needs 9000 tokens", contextwin.ErrTooBig), true, nil},
		{"auth", fmt.Errorf("model call: %w", auth), false,
			&ModelError{Provider: "anthropic", Kind: "auth", Status: 401, Message: auth.Error(), NeedsSetup: true}},
		{"not configured", unset, false,
			&ModelError{Provider: "none", Kind: "not_configured", Message: unset.Error(), NeedsSetup: true}},
		{"rate limited", limited, false,
			&ModelError{Provider: "openai", Kind: "rate_limited", Status: 429, Message: limited.Error()}},
		{"busy", busy, false, nil},
		{"cancelled with a provider's error", fmt.Errorf("%w: %w", context.Canceled, limited), false, nil},
		{"other", errors.New("disk on fire"), false, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := reported(tt.err)
			if got.Error() != tt.err.Error() || !errors.Is(got, tt.err) {
				t.Fatalf("reported %q as %q, which does not wrap it", tt.err, got)
			}
			if errors.Is(got, ErrInvalid) != tt.invalid {
				t.Errorf("errors.Is(%q, ErrInvalid) = %v, want %v", got, !tt.invalid, tt.invalid)
			}
			var me *ModelError
			if !errors.As(got, &me) {
				if tt.model != nil {
					t.Fatalf("%q is not a ModelError", got)
				}
				return
			}
			if tt.model == nil {
				t.Fatalf("%q became a ModelError", got)
			}
			want := *tt.model
			want.err = tt.err
			if *me != want {
				t.Errorf("ModelError = %+v, want %+v", *me, want)
			}
			if pe, ok := provider.AsError(got); !ok || pe.Error() != me.Message {
				t.Errorf("provider.AsError(%q) = %v, %v", got, pe, ok)
			}
		})
	}
	if reported(nil) != nil {
		t.Error("reported(nil) is not nil")
	}
}
