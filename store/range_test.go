package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// EachEventIn reads the part of a log a Range names: by seq, by kind,
// backwards up to where fn stops, with the payloads a reader does not
// need left out, or cut to the member it wants.
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
		{"bare up to 4 but what is needed", Range{Bare: 4, Need: []string{"context_assembled"}}, 0, `1:session_started:<nil>(bare) 2:user_message:<nil>(bare) 3:tool_result:<nil>(bare) 4:context_assembled:{"v":1,"raw":7} 5:tool_result:{"v":1,"output":"none"} 6:user_message:{"v":1,"text":"more"}`},
		{"from a member on", Range{Kinds: []string{"tool_result"}, From: []byte(`"seen":`)}, 0, `3:tool_result:"seen":[1]} 5:tool_result:<nil>`},
		{"bare and from", Range{Bare: 3, Need: []string{"tool_result"}, From: []byte(`"output":`)}, 0, `1:session_started:<nil>(bare) 2:user_message:<nil>(bare) 3:tool_result:"output":"long","seen":[1]} 4:context_assembled:<nil> 5:tool_result:"output":"none"} 6:user_message:<nil>`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			err := s.EachEventIn(ctx, "a", tt.r, func(r Record) error {
				p := "<nil>"
				if r.Payload != nil {
					p = string(r.Payload)
				}
				if r.Tokens == 0 && r.CreatedAt == 0 {
					p += "(bare)"
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
