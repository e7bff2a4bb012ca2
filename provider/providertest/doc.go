// Package providertest replays recorded model API responses from a local
// HTTP server on 127.0.0.1, and records what the client sent, so provider
// tests run with no network and assert both directions of the wire.
package providertest
