package tools

// DefaultCaps are the caps of run_command's output, also used for tools
// defined outside this package (MCP tools) that give no caps of their own.
var DefaultCaps = Caps{HeadLines: 100, HeadBytes: 8 << 10, TailLines: 200, TailBytes: 16 << 10}

// CapOutput redacts text and caps it as the built-in tools cap theirs:
// within caps it is returned whole; past them, head and tail are kept and
// the whole (redacted) text is spilled to the call's artifact, which the
// result names. Tools defined outside this package use it so that every
// output the model reads is redacted and capped the same way.
func CapOutput(env *Env, caps Caps, text string) Result {
	if caps == (Caps{}) {
		caps = DefaultCaps
	}
	c := newCapture(env, caps)
	c.WriteString(env.redact(text))
	return c.Finish()
}
