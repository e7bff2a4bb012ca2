// Package contextwin builds the model's context window from a session's
// log. The log is the state; the messages sent to the model are a
// projection of it, rebuilt from scratch for every model call.
package contextwin
