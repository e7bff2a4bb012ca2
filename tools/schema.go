package tools

import (
	"embed"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/bridle-dev/bridle/permission"
)

// validations counts the inputs validated, for tests.
var validations atomic.Int64

// inputSchema is a built-in tool's input schema, derived from its Go
// input type and compiled once, on first use: at package init it cost
// ~2.5 ms of every start, before bridle could answer initialize.
type inputSchema struct {
	raw      json.RawMessage
	resolved *jsonschema.Resolved
}

// deriveSchema derives T's schema with jsonschema.For: a property per
// json field, required unless omitempty, closed to other properties, the
// description from the field's jsonschema tag. A field's check tag adds
// what For cannot infer: comma-separated minLength=N, maxLength=N,
// minimum=N, enum=a|b.
func deriveSchema[T any]() *inputSchema { return deriveSchemaWith[T](nil) }

// deriveSchemaWith is deriveSchema with adjust applied to the derived
// schema before it is resolved: for what a check tag cannot say, such as
// constraints inside an array's items.
func deriveSchemaWith[T any](adjust func(*jsonschema.Schema)) *inputSchema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err)
	}
	typ := reflect.TypeFor[T]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		prop := s.Properties[name]
		if prop == nil {
			continue
		}
		for c := range strings.SplitSeq(f.Tag.Get("check"), ",") {
			if c == "" {
				continue
			}
			k, v, _ := strings.Cut(c, "=")
			switch k {
			case "enum":
				for _, e := range strings.Split(v, "|") {
					prop.Enum = append(prop.Enum, e)
				}
			case "minLength", "maxLength", "minimum":
				n, err := strconv.Atoi(v)
				if err != nil {
					panic(fmt.Sprintf("%s.%s: check %q: %v", typ, f.Name, c, err))
				}
				switch k {
				case "minLength":
					prop.MinLength = &n
				case "maxLength":
					prop.MaxLength = &n
				case "minimum":
					m := float64(n)
					prop.Minimum = &m
				}
			default:
				panic(fmt.Sprintf("%s.%s: unknown check %q", typ, f.Name, c))
			}
		}
	}
	if adjust != nil {
		adjust(s)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	res, err := s.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("%s: %v", typ, err))
	}
	return &inputSchema{raw: raw, resolved: res}
}

// validate checks a call's input against the schema. The error is worded
// for the model, which gets it as the call's result.
func (s *inputSchema) validate(tool string, input json.RawMessage) error {
	return validateAgainst(s.resolved, tool, input)
}

func validateAgainst(sch *jsonschema.Resolved, tool string, input json.RawMessage) error {
	validations.Add(1)
	var inst any
	if err := json.Unmarshal(orEmpty(input), &inst); err != nil {
		return fmt.Errorf("%s: the arguments are not valid JSON (%v); send an object matching the tool's schema", tool, err)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("%s: the arguments do not match its schema: %s", tool, describe(err))
	}
	return nil
}

//go:embed *.md
var docFiles embed.FS

// doc is a tool's description, from the .md file beside it: lines of a
// paragraph are joined with spaces, paragraphs kept apart by a blank line.
// It names the tool's settings as {{.Field}} of the struct render is
// given, and may choose text with {{if .Field}}…{{else}}…{{end}} (taken
// when the field is not zero, not nested). That is all the descriptions
// need; text/template did the same and cost the binary its package.
type doc struct{ name, text string }

func loadDoc(name string) doc {
	b, err := docFiles.ReadFile(name)
	if err != nil {
		panic(err)
	}
	paras := strings.Split(strings.TrimSpace(string(b)), "\n\n")
	for i, p := range paras {
		paras[i] = strings.Join(strings.Fields(strings.ReplaceAll(p, "\n", " ")), " ")
	}
	return doc{name: name, text: strings.Join(paras, "\n\n")}
}

// render fills the description in with data's fields. A field the struct
// lacks or an action it does not know is a bug in the .md file: it panics,
// and the tools' tests render every description.
func (d doc) render(data any) string {
	v := reflect.ValueOf(data)
	field := func(name string) reflect.Value {
		var f reflect.Value
		if v.Kind() == reflect.Struct {
			f = v.FieldByName(name)
		}
		if !f.IsValid() {
			panic(fmt.Sprintf("%s: no setting %q to fill in", d.name, name))
		}
		return f
	}
	var b strings.Builder
	rest := d.text
	inIf, taken, skip := false, false, false
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			if inIf {
				panic(fmt.Sprintf("%s: {{if}} without {{end}}", d.name))
			}
			b.WriteString(rest)
			return b.String()
		}
		if !skip {
			b.WriteString(rest[:i])
		}
		j := strings.Index(rest[i:], "}}")
		if j < 0 {
			panic(fmt.Sprintf("%s: {{ without }}", d.name))
		}
		action := strings.TrimSpace(rest[i+2 : i+j])
		rest = rest[i+j+2:]
		switch {
		case strings.HasPrefix(action, "if .") && !inIf:
			inIf, taken = true, !field(action[len("if ."):]).IsZero()
			skip = !taken
		case action == "else" && inIf:
			skip = taken
		case action == "end" && inIf:
			inIf, skip = false, false
		case strings.HasPrefix(action, "."):
			if !skip {
				fmt.Fprint(&b, field(action[1:]).Interface())
			}
		default:
			panic(fmt.Sprintf("%s: unsupported action {{%s}}", d.name, action))
		}
	}
}

// toolSpec is what every tool states the same way: its name, how an
// editor shows its calls, what it can do, its description (an embedded
// .md) and its input's schema, derived from the input's Go type once.
type toolSpec struct {
	name   string
	kind   Kind
	effect permission.Effect
	doc    doc
	schema func() *inputSchema
}

// declared gives a tool the methods of Tool its spec answers. A tool
// embeds it with its own type (Glob embeds declared[Glob]) and has a
// spec method; one whose description shows its settings has its own
// Description.
type declared[T interface{ spec() *toolSpec }] struct{}

func (declared[T]) of() *toolSpec {
	var t T
	return t.spec()
}

func (d declared[T]) Name() string                   { return d.of().name }
func (d declared[T]) Description() string            { return d.of().doc.render(nil) }
func (d declared[T]) Schema() json.RawMessage        { return d.of().schema().raw }
func (d declared[T]) compiled() *jsonschema.Resolved { return d.of().schema().resolved }
func (d declared[T]) Kind() Kind                     { return d.of().kind }
func (d declared[T]) Effect() permission.Effect      { return d.of().effect }

// newSpec is the spec of the tool name, whose description is name.md and
// whose input is In.
func newSpec[In any](name string, kind Kind, effect permission.Effect) toolSpec {
	return toolSpec{name: name, kind: kind, effect: effect, doc: loadDoc(name + ".md"), schema: sync.OnceValue(deriveSchema[In])}
}
