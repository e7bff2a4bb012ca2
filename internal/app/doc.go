// Package app turns the resolved configuration (config) into what a
// session runs with: model clients, the context window, the project's
// instructions and the sandbox's settings; builds, once, the whole stack
// that serve, run and rewind use (App: the store, the box, the tools,
// bridle's own and hidden paths, the session manager); and does what each
// subcommand asks of it (Serve, Run, Rewind, ReadLog, Sessions, Doctor),
// returning what internal/cli prints.
package app
