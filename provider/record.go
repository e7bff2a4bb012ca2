package provider

import (
	"context"
	"encoding/json"
	"iter"
	"os"
)

// recorder appends every request a provider is sent to a file, one JSON
// object a line: BRIDLE_RECORD_REQUESTS=path shows exactly what left for
// the model (the end-to-end tests check that it holds no secret).
type recorder struct {
	Provider
	path string
}

func (r recorder) Stream(ctx context.Context, req Request) iter.Seq2[Delta, error] {
	if b, err := json.Marshal(req); err == nil {
		// One write with O_APPEND: lines of concurrent sessions do not mix.
		if f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
			f.Write(append(b, '\n'))
			f.Close()
		}
	}
	return r.Provider.Stream(ctx, req)
}

// MaybeRecord wraps p in a recorder when BRIDLE_RECORD_REQUESTS is set.
func MaybeRecord(p Provider) Provider {
	if path := os.Getenv("BRIDLE_RECORD_REQUESTS"); path != "" {
		return recorder{Provider: p, path: path}
	}
	return p
}
