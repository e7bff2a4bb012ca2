package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// EachEventIn reads the part of a log a Range names: by seq, by kind,
// backwards up to where fn stops, with the payloads cut to the member a
// reader wants.
func TestEachEventInReadsTheRange(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	newSession(t, s, "a") // seq 1: session_started {}
	if _, err := s.Append(ctx, "a",
		Record{Kind: "user_message", Payload: []byte(`{"v":1,"text":"go"}`), Tokens: 2},
		Record{Kind: "tool_result", Payload: []byte(`{"v":1,"output":"long","seen":[1]}`), Tokens: 5},
		Record{Kind: "context_assembled", Payload: []byte(`{"v":1,"raw":7}`)},
		Record{Kind: "tool_result", Payload: []byte(`{"v":1,"output":"none"}`), Tokens: 1},
		Record{Kind: "user_message", Payload: []byte(`{"v":1,"text":"more"}`)},
	); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		r    Range
		stop int64 // fn stops at this seq
		want string
	}{
		{"all", Range{}, 0, `1:session_started:{} 2:user_message:{"v":1,"text":"go"} 3:tool_result:{"v":1,"output":"long","seen":[1]} 4:context_assembled:{"v":1,"raw":7} 5:tool_result:{"v":1,"output":"none"} 6:user_message:{"v":1,"text":"more"}`},
		{"a stretch", Range{After: 2, Through: 4}, 0, `3:tool_result:{"v":1,"output":"long","seen":[1]} 4:context_assembled:{"v":1,"raw":7}`},
		{"kinds", Range{Kinds: []string{"user_message", "context_assembled"}}, 0, `2:user_message:{"v":1,"text":"go"} 4:context_assembled:{"v":1,"raw":7} 6:user_message:{"v":1,"text":"more"}`},
		{"backwards, stopped", Range{Backwards: true}, 4, `6:user_message:{"v":1,"text":"more"} 5:tool_result:{"v":1,"output":"none"} 4:context_assembled:{"v":1,"raw":7}`},
		{"from a member on", Range{Kinds: []string{"tool_result"}, From: []byte(`"seen":`)}, 0, `3:tool_result:"seen":[1]} 5:tool_result:<nil>`},
		{"kinds in a stretch, backwards", Range{After: 1, Through: 5, Kinds: []string{"tool_result", "user_message"}, Backwards: true}, 0, `5:tool_result:{"v":1,"output":"none"} 3:tool_result:{"v":1,"output":"long","seen":[1]} 2:user_message:{"v":1,"text":"go"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := s.EachEventIn(ctx, "a", tt.r, func(r Record) error {
				p := "<nil>"
				if r.Payload != nil {
					p = string(r.Payload)
				}
				got = append(got, fmt.Sprintf("%d:%s:%s", r.Seq, r.Kind, p))
				if r.Seq == tt.stop {
					return ErrStop
				}
				return nil
			})
			if err != nil || strings.Join(got, " ") != tt.want {
				t.Errorf("read %s, %v\nwant %s", strings.Join(got, " "), err, tt.want)
			}
		})
	}
}

// SeqsByKind reads which events are of which kind, in a stretch of the
// log, from the index of kinds.
func TestSeqsByKind(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	newSession(t, s, "a") // seq 1
	newSession(t, s, "b") // another session's events are not a's
	var recs []Record
	for i := range 300 {
		recs = append(recs, Record{Kind: []string{"user_message", "tool_result", "assistant_message"}[i%3], Payload: []byte(`{"v":1}`)})
	}
	if _, err := s.Append(ctx, "a", recs...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, "b", recs[:7]...); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name           string
		after, through int64
	}{
		{"all", 0, 0},
		{"a stretch", 10, 200},
		{"past the end", 400, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.SeqsByKind(ctx, "a", tt.after, tt.through)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string][]int64{}
			err = s.EachEventIn(ctx, "a", Range{After: tt.after, Through: tt.through}, func(r Record) error {
				want[r.Kind] = append(want[r.Kind], r.Seq)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("SeqsByKind = %v\nthe events say %v", got, want)
			}
		})
	}
}
