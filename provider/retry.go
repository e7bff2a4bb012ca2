package provider

import (
	"context"
	"errors"
	"iter"
	"math/rand/v2"
	"syscall"
	"time"
)

// RetryPolicy says when and how often a failed call is tried again.
type RetryPolicy struct {
	// Attempts is the most calls made in all, the first included; 5 when
	// zero.
	Attempts int
	// BaseDelay is the wait before the first retry, doubled for each
	// further one; 1s when zero.
	BaseDelay time.Duration
	// MaxDelay caps the backoff; 30s when zero.
	MaxDelay time.Duration
	// MaxRetryAfter is the longest retry-after bridle will wait out; a
	// longer one ends the call with the error, so the user decides. 2m
	// when zero.
	MaxRetryAfter time.Duration
	// OnRetry is told about each failed attempt that will be retried,
	// before the wait, so the session can log it.
	OnRetry func(attempt int, err error, wait time.Duration)
}

// refusedAttempts is the most calls made to a URL where nothing listens
// (connection refused), the first included, whatever Attempts says.
const refusedAttempts = 2

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = 5
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = time.Second
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 30 * time.Second
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = 2 * time.Minute
	}
	return p
}

// backoff is the wait before retry number n (1-based): exponential,
// capped, with "equal jitter" (half fixed, half random) so that many
// clients rejected together do not return together, yet none retries at
// once.
func (p RetryPolicy) backoff(n int) time.Duration {
	d := p.BaseDelay << (n - 1)
	if d > p.MaxDelay || d <= 0 {
		d = p.MaxDelay
	}
	half := d / 2
	return half + rand.N(half+1)
}

// WithRetry returns p with failed calls retried under policy. A call is
// retried only when the error is a retryable *Error (429, 5xx, 529,
// overloaded, a connection lost before the first token) and nothing but
// usage has been passed on yet: once text, thinking or a tool call has
// reached the consumer, a retry would repeat it, so the error is passed on
// marked Partial and the consumer keeps what it has.
func WithRetry(p Provider, policy RetryPolicy) Provider {
	return &retrying{p: p, policy: policy.withDefaults()}
}

type retrying struct {
	p      Provider
	policy RetryPolicy
}

func (r *retrying) Name() string { return r.p.Name() }

func (r *retrying) Stream(ctx context.Context, req Request) iter.Seq2[Delta, error] {
	return func(yield func(Delta, error) bool) {
		for attempt := 1; ; attempt++ {
			output := false
			var failed error
			for d, err := range r.p.Stream(ctx, req) {
				if err != nil {
					failed = err
					break
				}
				if d.Kind != DeltaUsage && d.Kind != DeltaStop {
					output = true
				}
				if !yield(d, nil) {
					return
				}
			}
			if failed == nil {
				return
			}
			wait, retry := r.decide(ctx, attempt, failed, output)
			if !retry {
				yield(Delta{}, markPartial(failed, output))
				return
			}
			if r.policy.OnRetry != nil {
				r.policy.OnRetry(attempt, failed, wait)
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				yield(Delta{}, ctx.Err())
				return
			case <-t.C:
			}
		}
	}
}

func (r *retrying) decide(ctx context.Context, attempt int, err error, output bool) (time.Duration, bool) {
	if output || attempt >= r.policy.Attempts || ctx.Err() != nil {
		return 0, false
	}
	pe, ok := AsError(err)
	if !ok || !pe.Retryable || pe.Partial {
		return 0, false
	}
	if errors.Is(err, syscall.ECONNREFUSED) && attempt >= refusedAttempts {
		// Nothing listens there: a server being restarted is back
		// within a retry; more would only keep the user waiting.
		return 0, false
	}
	if pe.RetryAfter > 0 {
		if pe.RetryAfter > r.policy.MaxRetryAfter {
			return 0, false
		}
		return pe.RetryAfter, true
	}
	return r.policy.backoff(attempt), true
}

// markPartial makes sure an error after streamed output says so and is
// not taken for retryable by anyone further up.
func markPartial(err error, output bool) error {
	if !output {
		return err
	}
	var pe *Error
	if errors.As(err, &pe) {
		if !pe.Partial || pe.Retryable {
			cp := *pe
			cp.Partial, cp.Retryable = true, false
			return &cp
		}
	}
	return err
}
