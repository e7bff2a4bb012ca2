package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/bridle-dev/bridle/provider"
)

// classify turns an HTTP, stream or transport error into a provider.Error worded
// for the person at the editor. partial says output was already streamed.
func (c *Client) classify(ctx context.Context, err error, partial bool) error {
	var api *provider.StatusError
	if !errors.As(err, &api) {
		return provider.TransportError(ctx, c.ep.Name, c.ep.BaseURL, err, partial)
	}
	status := api.Status
	raw := string(api.Body)
	typ := gjson.Get(raw, "error.type").String()
	msg := gjson.Get(raw, "error.message").String()
	if msg == "" {
		msg = strings.TrimSpace(raw)
	}
	// An error event inside a 200 stream carries the status of the stream,
	// so the error type decides; the HTTP status decides when there is no
	// type (a proxy's HTML page, say).
	e, msg := provider.APIError(c.ep.Name, status, api.Header, msg, partial, err)
	if status == http.StatusOK {
		e.Status = 0
	}
	switch {
	case typ == "overloaded_error" || status == 529:
		e.Kind, e.Retryable = provider.ErrOverloaded, true
		e.Message = "the API is overloaded (" + msg + ")"
	case typ == "rate_limit_error" || status == http.StatusTooManyRequests:
		e.Kind, e.Retryable = provider.ErrRateLimited, true
		e.Message = "rate limited (" + msg + ")"
		if code := gjson.Get(raw, "error.details.error_code").String(); code == "enforced_spend_limit_reached" {
			e.Retryable = false
			e.Message = "the organisation's monthly spend limit is reached (" + msg + "); retrying will not help until the limit is raised"
		}
	case typ == "authentication_error" || status == http.StatusUnauthorized:
		e.Kind = provider.ErrAuth
		e.Message = "the API key was rejected (" + msg + "): check ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN"
	case typ == "permission_error" || status == http.StatusForbidden:
		e.Kind = provider.ErrAuth
		e.Message = "the API key may not use this model or feature (" + msg + ")"
	case typ == "billing_error" || status == http.StatusPaymentRequired:
		e.Kind = provider.ErrAuth
		e.Message = "the account cannot be billed (" + msg + "): check the plan and credit balance in the Anthropic console"
	case typ == "not_found_error" || status == http.StatusNotFound:
		if strings.Contains(strings.ToLower(msg), "model") {
			e.Kind = provider.ErrModel
			e.Message = "the model is not served (" + msg + ")"
		} else {
			e.Kind = provider.ErrBadRequest
			e.Message = fmt.Sprintf("%s answered 404 (%s): check ANTHROPIC_BASE_URL", c.ep.BaseURL, msg)
		}
	case status == http.StatusRequestEntityTooLarge || isTooLong(msg):
		e.Kind = provider.ErrContextLength
		e.Message = "the request is too long (" + msg + ")"
	case typ == "invalid_request_error" || status == http.StatusBadRequest || status == http.StatusUnprocessableEntity:
		e.Kind = provider.ErrBadRequest
		e.Message = "the API rejected the request (" + msg + ")"
	case typ == "timeout_error" || status == http.StatusGatewayTimeout || status == http.StatusRequestTimeout:
		e.Kind, e.Retryable = provider.ErrServer, true
		e.Message = "the API timed out (" + msg + ")"
	case typ == "api_error" || status >= 500:
		e.Kind, e.Retryable = provider.ErrServer, true
		e.Message = "the API failed (" + msg + ")"
	default:
		e.Kind = provider.ErrBadRequest
		e.Message = fmt.Sprintf("unexpected answer (%s)", msg)
	}
	return e.Settle()
}

func isTooLong(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "prompt is too long") || strings.Contains(m, "context window") ||
		strings.Contains(m, "too many tokens") || strings.Contains(m, "context length")
}
