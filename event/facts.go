package event

// Facts are what the rest of bridle knows about a kind of event without
// looking inside one. They live here, next to the kinds, so that adding a
// kind is one entry in this table (TestEveryKindHasFacts fails until it
// is there) and a Summary method (the compiler asks for it), not an arm
// in a switch of every package that reads the log.
//
// contextwin keeps its own switches (projection into the window, token
// accounting): they read the payloads, not facts of the kind.
type Facts struct {
	// OpensTurn: a prompt starts here. Turns (and prompt numbers) are
	// counted by these events; recovery reads back to the last one.
	OpensTurn bool
	// ClosesTurn: the turn is finished once this is in the log; recovery
	// has nothing to do for a log that ends with one.
	ClosesTurn bool
	// OncePerCall: the event is indexed by its tool call key (CallKey)
	// in the store's idempotency table, in the same transaction, so a
	// call can be recorded as started, or finished, only once.
	OncePerCall bool
	// Streamed: its text and thinking reached the editor as streamed
	// fragments before it was committed, so a live commit does not send
	// them again (tool calls it carries are still new).
	Streamed bool
	// Shown: the editor is sent updates for it, live and on replay
	// (session/replay's Replayer.Updates); the others are only appended.
	// A provider error is shown only when it is final.
	Shown bool
	// Kept: a live session holds events of this kind whole even before
	// its window's start, where it keeps the others as stubs (Stub):
	// something reads them from the whole log (the mode and model, the
	// pins and plan, standing answers, rewinds, subagents, the files that
	// changed since the model saw them). They are few and small.
	Kept bool
}

var facts = map[Kind]Facts{
	KindSessionStarted:   {Kept: true},
	KindUserMessage:      {OpensTurn: true, Shown: true},
	KindAssistantMessage: {Streamed: true, Shown: true},
	KindToolStarted:      {OncePerCall: true, Shown: true},
	KindToolResult:       {OncePerCall: true, Shown: true},
	KindApprovalRequest:  {},
	KindApprovalGranted:  {Kept: true},
	KindApprovalDenied:   {Kept: true},
	KindInterrupted:      {Streamed: true, Shown: true},
	KindCompaction:       {Shown: true, Kept: true},
	KindConstraintPinned: {Shown: true, Kept: true},
	KindDecisionRecorded: {Shown: true, Kept: true},
	KindContextAssembled: {Shown: true},
	KindModeChanged:      {Shown: true, Kept: true},
	KindModelChanged:     {Kept: true},
	KindFileChanged:      {Kept: true},
	KindSubagentStarted:  {Kept: true},
	KindSubagentFinished: {Kept: true},
	KindTurnFinished:     {ClosesTurn: true},
	KindProviderError:    {Shown: true},
	KindPlanUpdated:      {Shown: true, Kept: true},
	KindRewindStarted:    {Kept: true},
	KindRewound:          {Shown: true, Kept: true},
	KindHookRan:          {Shown: true},
	KindCommandFinished:  {Shown: true, Kept: true},
}

// Facts returns what is known of events of kind k (none for a kind this
// bridle does not know; Decode refuses those anyway).
func (k Kind) Facts() Facts { return facts[k] }

// Kinds lists every kind this bridle reads and writes.
func Kinds() []Kind {
	out := make([]Kind, 0, len(decoders))
	for k := range decoders {
		out = append(out, k)
	}
	return out
}

// CallKey returns the tool call key that indexes p in the idempotency
// table, or "" if its kind is not OncePerCall.
func CallKey(p Payload) string {
	switch v := p.(type) {
	case ToolStarted:
		return v.Key
	case ToolResult:
		return v.Key
	}
	return ""
}
