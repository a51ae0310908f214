package state

import (
	"bytes"
	"fmt"
	"io"
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
	var b bytes.Buffer
	if format == JSON {
		b.Grow(256 * (len(doc.Tasks) + len(doc.Projects) + len(doc.AppVersions) + 8))
	}
	if err := Write(&b, doc, format); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Write writes doc to w as Encode encodes it. JSON is written as it is encoded, a list
// element at a time, so that a large document is not held twice in memory; if encoding
// fails (a number that is not finite: Validate refuses them in any input, so only a
// faulty decision makes one), w has received part of the document. Give w a buffer
// (bufio.Writer): Write makes many small writes.
func Write(w io.Writer, doc *Document, format Format) error {
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
		return writeJSON(w, doc)
	case YAML:
		data, err := EncodeValue(doc, YAML)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	return fmt.Errorf("unknown format %q", format)
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

// writeJSON writes the document indented, except that each element of a top-level list
// (a project, an app version, a task) stays on one line: a 10,000-task document is
// written several times faster than fully indented, and reads and diffs a task a line.
func writeJSON(w io.Writer, doc *Document) error {
	// Each element is encoded into one buffer, reused, then written: no garbage per
	// element. The encoder adds a newline after each value, left out here.
	var elem bytes.Buffer
	enc := json.NewEncoder(&elem)
	write := func(s string) error {
		_, err := io.WriteString(w, s)
		return err
	}
	if err := write("{"); err != nil {
		return err
	}
	v := reflect.ValueOf(doc).Elem()
	t := v.Type()
	first := true
	for i := 0; i < t.NumField(); i++ {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		fv := v.Field(i)
		if opts == "omitempty" && fv.IsZero() || (fv.Kind() == reflect.Slice && fv.Len() == 0 && opts == "omitempty") {
			continue
		}
		sep := ","
		if first {
			sep = ""
		}
		first = false
		if err := write(sep + "\n  " + strconv.Quote(name) + ": "); err != nil {
			return err
		}
		if fv.Kind() == reflect.Slice && fv.Len() > 0 {
			if err := write("["); err != nil {
				return err
			}
			for j := 0; j < fv.Len(); j++ {
				sep := ",\n    "
				if j == 0 {
					sep = "\n    "
				}
				elem.Reset()
				elem.WriteString(sep)
				// A pointer to the element: an interface holding the element itself
				// would be a copy of it.
				if err := enc.Encode(fv.Index(j).Addr().Interface()); err != nil {
					return err
				}
				if _, err := w.Write(bytes.TrimSuffix(elem.Bytes(), []byte("\n"))); err != nil {
					return err
				}
			}
			if err := write("\n  ]"); err != nil {
				return err
			}
			continue
		}
		part, err := json.MarshalIndent(fv.Interface(), "  ", "  ")
		if err != nil {
			return err
		}
		if _, err := w.Write(part); err != nil {
			return err
		}
	}
	return write("\n}\n")
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
