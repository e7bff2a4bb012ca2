package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/bridle-dev/bridle/permission"
)

// Plan sets the session's plan: the steps of the work and how far each
// is. The session records it as a plan_updated event, shows it in the
// editor and keeps the latest in every request.
type Plan struct{ declared[Plan] }

// PlanStep is one step of a plan.
type PlanStep struct {
	Content string `json:"content" jsonschema:"what the step does, in a few words"`
	Status  string `json:"status" jsonschema:"pending, in_progress or completed"`
}

type planInput struct {
	Entries []PlanStep `json:"entries" jsonschema:"every step of the plan, in order"`
}

// A plan is repeated in every request: it stays short.
const (
	MaxPlanSteps   = 30
	MaxPlanStepLen = 300
)

// planStatuses are a step's statuses, as ACP names them.
var planStatuses = []string{"pending", "in_progress", "completed"}

func (Plan) spec() *toolSpec { return &planSpec }

var planSpec = toolSpec{name: "plan", kind: KindThink, effect: permission.EffectNone, doc: loadDoc("plan.md"),
	schema: sync.OnceValue(func() *inputSchema {
		return deriveSchemaWith[planInput](func(s *jsonschema.Schema) {
			entries := s.Properties["entries"]
			entries.Type, entries.Types = "array", nil // a list, never null
			entries.MaxItems = jsonschema.Ptr(MaxPlanSteps)
			step := entries.Items
			step.Properties["content"].MinLength = jsonschema.Ptr(1)
			step.Properties["content"].MaxLength = jsonschema.Ptr(MaxPlanStepLen)
			for _, st := range planStatuses {
				step.Properties["status"].Enum = append(step.Properties["status"].Enum, st)
			}
		})
	})}

func (t Plan) parse(env *Env, input json.RawMessage) (planInput, error) {
	in, err := parseInput[planInput](env, t.Name(), planSpec.schema(), input)
	if err != nil {
		return in, err
	}
	for i := range in.Entries {
		in.Entries[i].Content = strings.TrimSpace(in.Entries[i].Content)
		if in.Entries[i].Content == "" {
			return in, fmt.Errorf("plan: step %d is empty", i+1)
		}
	}
	return in, nil
}

func (t Plan) Preview(_ context.Context, env *Env, input json.RawMessage) (Preview, error) {
	in, err := t.parse(env, input)
	if err != nil {
		return Preview{}, err
	}
	done := 0
	for _, e := range in.Entries {
		if e.Status == "completed" {
			done++
		}
	}
	return Preview{Title: fmt.Sprintf("Plan: %d of %d steps done", done, len(in.Entries))}, nil
}

func (t Plan) Run(ctx context.Context, env *Env, input json.RawMessage) Result {
	in, err := t.parse(env, input)
	if err != nil {
		return Errorf("%v", err)
	}
	steps := make([]PlanStep, len(in.Entries))
	var b strings.Builder
	b.WriteString("Plan updated:\n")
	for i, e := range in.Entries {
		steps[i] = PlanStep{Content: env.redact(e.Content), Status: e.Status}
		fmt.Fprintf(&b, "- %s (%s)\n", steps[i].Content, strings.ReplaceAll(e.Status, "_", " "))
	}
	if len(steps) == 0 {
		b.Reset()
		b.WriteString("Plan cleared.\n")
	}
	return Result{Output: strings.TrimRight(b.String(), "\n"), Plan: steps, PlanSet: true}
}
