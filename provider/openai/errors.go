package openai

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
	var (
		status         int
		code, typ, msg string
		header         http.Header
		api            *provider.StatusError
		streamErr      *streamError
	)
	switch {
	case errors.As(err, &api):
		status, header = api.Status, api.Header
		raw := string(api.Body)
		// OpenAI, Ollama and llama.cpp put the fields under "error";
		// some servers send them at the top level.
		msg = first(gjson.Get(raw, "error.message").String(), gjson.Get(raw, "message").String())
		code = first(gjson.Get(raw, "error.code").String(), gjson.Get(raw, "code").String())
		typ = first(gjson.Get(raw, "error.type").String(), gjson.Get(raw, "type").String())
		if msg == "" {
			msg = first(gjson.Get(raw, "error").String(), strings.TrimSpace(raw))
		}
		if msg == "" {
			msg = http.StatusText(status)
		}
	case errors.As(err, &streamErr):
		// An error object in the middle of a 200 stream.
		data := streamErr.data
		msg = first(gjson.Get(data, "error.message").String(), gjson.Get(data, "error").String())
		code = gjson.Get(data, "error.code").String()
		typ = gjson.Get(data, "error.type").String()
	default:
		e := provider.TransportError(ctx, c.ep.Name, c.ep.BaseURL, err, partial)
		if pe, ok := provider.AsError(e); ok && c.ep.Name != "openai" {
			pe.Message += fmt.Sprintf("; is the %s server running at %s?", c.ep.Name, c.ep.BaseURL)
		}
		return e
	}
	e, msg := provider.APIError(c.ep.Name, status, header, msg, partial, err)
	lower := strings.ToLower(msg + " " + code + " " + typ)
	switch {
	case code == "context_length_exceeded" || strings.Contains(lower, "maximum context length") ||
		strings.Contains(lower, "context length") || strings.Contains(lower, "context window") ||
		strings.Contains(lower, "too many tokens") || status == http.StatusRequestEntityTooLarge:
		e.Kind = provider.ErrContextLength
		e.Message = "the request is too long (" + msg + ")"
	case code == "insufficient_quota":
		e.Kind = provider.ErrRateLimited
		e.Message = "the account has no quota left (" + msg + "); retrying will not help until billing is fixed"
	case status == http.StatusTooManyRequests || code == "rate_limit_exceeded" || strings.Contains(lower, "rate limit"):
		e.Kind, e.Retryable = provider.ErrRateLimited, true
		e.Message = "rate limited (" + msg + ")"
	case status == http.StatusUnauthorized || code == "invalid_api_key":
		e.Kind = provider.ErrAuth
		e.Message = "the API key was rejected (" + msg + ")"
		if c.ep.Name == "openai" {
			e.Message += ": check OPENAI_API_KEY"
		}
	case status == http.StatusForbidden:
		e.Kind = provider.ErrAuth
		e.Message = "access denied (" + msg + ")"
	case code == "model_not_found" || (status == http.StatusNotFound && strings.Contains(lower, "model")):
		e.Kind = provider.ErrModel
		e.Message = "the model is not served (" + msg + ")"
		if c.ep.Name == "ollama" {
			e.Message += "; pull it first with `ollama pull`"
		}
	case status == http.StatusNotFound:
		e.Kind = provider.ErrBadRequest
		e.Message = fmt.Sprintf("%s answered 404 (%s): check the base URL, which must end in /v1", c.ep.BaseURL, msg)
	case strings.Contains(lower, "overloaded") || status == 529:
		e.Kind, e.Retryable = provider.ErrOverloaded, true
		e.Message = "the server is overloaded (" + msg + ")"
	case status >= 500 || (status == 0 && (typ == "server_error" || typ == "api_error" || typ == "")):
		e.Kind, e.Retryable = provider.ErrServer, true
		e.Message = "the server failed (" + msg + ")"
	default:
		e.Kind = provider.ErrBadRequest
		e.Message = "the server rejected the request (" + msg + ")"
	}
	return e.Settle()
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
