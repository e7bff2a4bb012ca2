package session

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/event"
	"github.com/bridle-dev/bridle/provider/scripted"
	"github.com/bridle-dev/bridle/store"
)

// A log longer than many of the loader's batches comes back whole and in
// order; an event this bridle cannot read stops the load with an error
// naming it, whichever batch it is in.
func TestLoadReadsALongLogInOrder(t *testing.T) {
	for _, bad := range []int64{0, 2, 1500, 3001} {
		t.Run(fmt.Sprintf("unreadable=%d", bad), func(t *testing.T) {
			ctx := context.Background()
			m, _ := newTestManager(t, &scripted.Scenario{})
			info, err := m.New(ctx, NewParams{Cwd: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			st := m.cfg.Store
			first, err := st.LastSeq(ctx, info.ID)
			if err != nil {
				t.Fatal(err)
			}
			var recs []store.Record
			for i := range 3000 {
				seq := first + 1 + int64(i)
				if seq == bad {
					recs = append(recs, store.Record{Kind: "teleported", Payload: []byte(`{"v":1}`)})
					continue
				}
				b, err := event.Encode(event.UserMessage{Content: []event.Content{{Type: "text", Text: fmt.Sprintf("message %d", seq)}}})
				if err != nil {
					t.Fatal(err)
				}
				recs = append(recs, store.Record{Kind: string(event.KindUserMessage), Payload: b})
			}
			if _, err := st.Append(ctx, info.ID, recs...); err != nil {
				t.Fatal(err)
			}
			events, err := m.loadEvents(ctx, info.ID)
			if bad != 0 {
				if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("event %d:", bad)) || !strings.Contains(err.Error(), "newer bridle") {
					t.Fatalf("loading a log with event %d unreadable: %v", bad, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(events)) != first+3000 {
				t.Fatalf("%d events loaded, want %d", len(events), first+3000)
			}
			for i, e := range events {
				if e.Seq != int64(i)+1 {
					t.Fatalf("event %d has seq %d", i, e.Seq)
				}
				if u, ok := e.Payload.(event.UserMessage); ok && e.Seq > first && u.Content[0].Text != fmt.Sprintf("message %d", e.Seq) {
					t.Fatalf("event %d holds %q", e.Seq, u.Content[0].Text)
				}
			}
		})
	}
}
