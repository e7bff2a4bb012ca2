package session

import (
	"testing"

	"github.com/bridle-dev/bridle/event"
)

// finishedThrough is where session/fork cuts: after the last finished
// turn, never inside one that is running, that a crash left open, or a
// rewind half done (which writes no prompt).
func TestFinishedThrough(t *testing.T) {
	log := func(payloads ...event.Payload) []event.Event {
		var es []event.Event
		for i, p := range payloads {
			es = append(es, event.Event{Seq: int64(i + 1), Payload: p})
		}
		return es
	}
	started, user, said, done := event.SessionStarted{}, event.UserMessage{}, event.AssistantMessage{Text: "ok"}, event.TurnFinished{}
	for _, c := range []struct {
		name   string
		events []event.Event
		want   int64
	}{
		{"empty", nil, 0},
		{"started, no turn", log(started), 1},
		{"one finished turn", log(started, user, said, done), 4},
		{"a turn running", log(started, user, said, done, user, said), 4},
		{"only a turn running", log(started, user, said), 1},
		{"a rewind half done", log(started, user, said, done, event.RewindStarted{}), 4},
	} {
		if got := finishedThrough(c.events); got != c.want {
			t.Errorf("%s: finishedThrough = %d, want %d", c.name, got, c.want)
		}
	}
}
