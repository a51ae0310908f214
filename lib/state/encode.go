package state

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	// goccy/go-json: encoding/json's API at twice its speed, which keeps a 10,000-task
	// document within bsched's 50 ms budget (encoding/json/v2 is still an experiment).
	json "github.com/goccy/go-json"
	"go.yaml.in/yaml/v3"
)

// Encode writes doc in the given format, ending with a newline.
func Encode(doc *Document, format Format) ([]byte, error) {
	// Write empty lists as [] rather than null.
	if doc.Projects == nil {
		doc.Projects = []Project{}
	}
	if doc.AppVersions == nil {
		doc.AppVersions = []AppVersion{}
	}
	if doc.Tasks == nil {
		doc.Tasks = []Task{}
	}
	switch format {
	case JSON:
		return encodeJSON(doc)
	case YAML:
		return EncodeValue(doc, YAML)
	}
	return nil, fmt.Errorf("unknown format %q", format)
}

// plainFloats writes numbers below 1e11 without an exponent, so that Unix times read as
// times (1700172800, not 1.7001728e+09); larger ones, such as FLOPs, keep it.
func plainFloats(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!float" {
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil && math.Abs(f) < 1e11 {
			n.Value = strconv.FormatFloat(f, 'f', -1, 64)
			if f == math.Trunc(f) {
				n.Tag = "!!int" // the decoder takes whole numbers for float fields
			}
		}
	}
	for _, c := range n.Content {
		plainFloats(c)
	}
}

// encodeJSON writes the document indented, except that each element of a top-level list
// (a project, an app version, a task) stays on one line: a 10,000-task document is
// written several times faster than fully indented, and reads and diffs a task a line.
func encodeJSON(doc *Document) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(256 * (len(doc.Tasks) + len(doc.Projects) + len(doc.AppVersions) + 8))
	b.WriteString("{")
	v := reflect.ValueOf(doc).Elem()
	t := v.Type()
	first := true
	for i := 0; i < t.NumField(); i++ {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		fv := v.Field(i)
		if opts == "omitempty" && fv.IsZero() || (fv.Kind() == reflect.Slice && fv.Len() == 0 && opts == "omitempty") {
			continue
		}
		if !first {
			b.WriteString(",")
		}
		first = false
		b.WriteString("\n  " + strconv.Quote(name) + ": ")
		if fv.Kind() == reflect.Slice && fv.Len() > 0 {
			b.WriteString("[")
			for j := 0; j < fv.Len(); j++ {
				if j > 0 {
					b.WriteString(",")
				}
				b.WriteString("\n    ")
				elem, err := json.Marshal(fv.Index(j).Interface())
				if err != nil {
					return nil, err
				}
				b.Write(elem)
			}
			b.WriteString("\n  ]")
			continue
		}
		part, err := json.MarshalIndent(fv.Interface(), "  ", "  ")
		if err != nil {
			return nil, err
		}
		b.Write(part)
	}
	b.WriteString("\n}\n")
	return b.Bytes(), nil
}

// EncodeValue writes v, any value with json and yaml tags, as Encode writes documents
// (YAML indented by two spaces, numbers below 1e11 without an exponent; JSON indented
// by two spaces), ending with a newline. Other formats built on documents
// (lib/scenario) use it so that their files read as documents do.
func EncodeValue(v any, format Format) ([]byte, error) {
	switch format {
	case JSON:
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return nil, err
		}
		return append(b, '\n'), nil
	case YAML:
		var n yaml.Node
		if err := n.Encode(v); err != nil {
			return nil, err
		}
		plainFloats(&n)
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(&n); err != nil {
			return nil, err
		}
		if err := enc.Close(); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}
	return nil, fmt.Errorf("unknown format %q", format)
}
