package state

import (
	"encoding/json"
	"reflect"
)

// SchemaPath is where the repository keeps the generated JSON Schema of the document.
const SchemaPath = "schema/state-v1.schema.json"

// Schema returns the JSON Schema (draft 2020-12) of the document, generated from the Go
// types and their tags. A test keeps the copy at SchemaPath equal to it.
func Schema() ([]byte, error) {
	return SchemaFor(Document{}, SchemaPath, "bkit client state document, version 1",
		"The document every bkit client program reads and writes (lib/state). Times are Unix seconds, durations seconds, work FLOPs, speeds FLOPS.")
}

// SchemaDescriber is a type that gives its own JSON Schema (a type with custom decoding,
// such as a duration that is a number or a string with a unit).
type SchemaDescriber interface {
	JSONSchema() map[string]any
}

// SchemaFor returns the JSON Schema (draft 2020-12) of v's type, generated from its
// struct tags as Schema generates the document's; path is where the repository keeps
// the copy (the schema's $id).
func SchemaFor(v any, path, title, description string) ([]byte, error) {
	s := schemaOf(reflect.TypeOf(v))
	s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	s["$id"] = "https://github.com/bkit/bkit/" + path
	s["title"] = title
	s["description"] = description
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func schemaOf(t reflect.Type) map[string]any {
	if t.Kind() != reflect.Pointer {
		if d, ok := reflect.New(t).Interface().(SchemaDescriber); ok {
			return d.JSONSchema()
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOf(t.Elem())
	case reflect.Slice:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem())}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int:
		return map[string]any{"type": "integer"}
	case reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Struct:
		props := map[string]any{}
		var required []string
		for _, f := range fieldsOf(t).list {
			p := schemaOf(t.Field(f.index).Type)
			if f.doc != "" {
				p["description"] = f.doc
			}
			if f.min != nil {
				p["minimum"] = *f.min
			}
			if f.max != nil {
				p["maximum"] = *f.max
			}
			if f.gt != nil {
				p["exclusiveMinimum"] = *f.gt
			}
			if f.enum != nil {
				p["enum"] = f.enum
			}
			if f.required {
				required = append(required, f.name)
			}
			props[f.name] = p
		}
		s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if required != nil {
			s["required"] = required
		}
		return s
	}
	panic("state: no schema for " + t.String())
}
