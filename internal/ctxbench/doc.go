// Package ctxbench is the context window's fidelity benchmark: randomized
// long sessions, played by the scripted model through the real session
// loop and a real SQLite log, with every request the model receives
// checked against the exact tokenizer.
package ctxbench
