package state

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/bkit/bkit/lib/limits"

	// goccy/go-json: encoding/json's API at twice its speed, which keeps a 10,000-task
	// document within bsched's 50 ms budget (encoding/json/v2 is still an experiment).
	json "github.com/goccy/go-json"
	"go.yaml.in/yaml/v3"
)

// Format is a document's encoding.
type Format string

// The encodings a document can have.
const (
	JSON Format = "json"
	YAML Format = "yaml"
)

// DetectFormat recognises a document by content: JSON starts with '{', anything else
// is read as YAML.
func DetectFormat(data []byte) Format {
	if t := bytes.TrimLeft(data, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		return JSON
	}
	return YAML
}

// Error is an invalid document: Problems holds one "path: what is wrong" line per
// problem found, File the name to show for the input.
type Error struct {
	File     string
	Problems []string
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = e.File + ": " + p
	}
	return strings.Join(lines, "\n")
}

// maxProblems bounds how many problems one error lists.
const maxProblems = 20

// Decode reads and validates a document. file names the input in error messages.
func Decode(data []byte, file string) (*Document, Format, error) {
	format := DetectFormat(data)
	doc := defaults()
	var err error
	if format == JSON {
		err = decodeJSON(data, &doc)
	} else {
		err = decodeYAML(data, &doc)
	}
	if err != nil {
		return nil, format, withFile(err, file)
	}
	if err := Validate(&doc); err != nil {
		return nil, format, withFile(err, file)
	}
	return &doc, format, nil
}

// Read is Decode of everything r holds, at most limits.DocumentBytes (or r's own limit
// when r is a *limits.Reader): a larger input is a *limits.TooLargeError.
func Read(r io.Reader, file string) (*Document, Format, error) {
	doc, format, _, err := ReadSource(r, file)
	return doc, format, err
}

// ReadSource is Read that also returns the bytes read, for WriteLike.
func ReadSource(r io.Reader, file string) (*Document, Format, []byte, error) {
	data, err := limits.ReadAll(r, file, limits.DocumentBytes)
	if limits.IsTooLarge(err) {
		return nil, "", nil, err
	}
	if err != nil {
		return nil, "", nil, fmt.Errorf("%s: %w", file, err)
	}
	doc, format, err := Decode(data, file)
	return doc, format, data, err
}

// NewDocument returns the document every decode starts from: the fields an input leaves
// out keep these values (preferences at BOINC's defaults, the host always available).
func NewDocument() *Document {
	doc := defaults()
	return &doc
}

// DecodeStrict decodes data, JSON or YAML recognised by content, into v (a non-nil
// pointer, usually to a struct with json tags) by the rules documents are decoded by:
// unknown fields, fields given twice, wrong types, non-finite numbers and trailing data
// are problems naming the field path (and for YAML the line); fields absent from data
// keep the values v holds, so fill v with the defaults first. A value whose pointer
// implements encoding.TextUnmarshaler is decoded from a YAML scalar's text (for JSON,
// give it an UnmarshalJSON too). Bounds are not checked: ValidateFields does that. The
// error is an *Error without File. Other formats built on documents (lib/scenario) use
// this so that their inputs read, and fail, as documents do.
func DecodeStrict(data []byte, v any) (Format, error) {
	format := DetectFormat(data)
	if format == JSON {
		return format, decodeJSON(data, v)
	}
	return format, decodeYAML(data, v)
}

func withFile(err error, file string) error {
	var e *Error
	if errors.As(err, &e) {
		e.File = file
		return e
	}
	return &Error{File: file, Problems: []string{err.Error()}}
}

// decodeJSON takes the fast path of encoding/json; when it fails, the slower decoder
// that tracks field paths runs over the same bytes to say where the problem is.
func decodeJSON(data []byte, v any) error {
	// The JSON decoder writes invalid UTF-8 in a string as U+FFFD (and --in-place would
	// then store that); YAML refuses it, and so do documents.
	if !utf8.Valid(data) {
		return &Error{Problems: []string{fmt.Sprintf("line %d: invalid UTF-8", invalidUTF8Line(data))}}
	}
	exact, counts := jsonKeysExactCounts(data, reflect.TypeOf(v))
	presize(v, counts)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, extra := dec.Token(); extra != io.EOF {
			return &Error{Problems: []string{"unexpected data after the document"}}
		}
		if exact {
			return nil
		}
		// A key given twice or in another case: the walker names it.
		fresh := reflect.New(reflect.TypeOf(v).Elem()).Interface()
		return decodeYAML(data, fresh)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return &Error{Problems: []string{fmt.Sprintf("line %d: invalid JSON: %v", line, se)}}
	}
	fresh := reflect.New(reflect.TypeOf(v).Elem()).Interface()
	if perr := decodeYAML(data, fresh); perr != nil {
		return perr
	}
	return &Error{Problems: []string{strings.TrimPrefix(err.Error(), "json: ")}}
}

// invalidUTF8Line is the line of data's first byte that is not valid UTF-8.
func invalidUTF8Line(data []byte) int {
	line := 1
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		if r == '\n' {
			line++
		}
		i += n
	}
	return line
}

// presize gives each nil slice field of the struct v points to the capacity counts
// says its array in the input has (the decoder fills a slice it is given from index 0,
// as encoding/json does, and grows it only when it is full). A slice v already holds is
// left alone: the decoder merges into its elements.
func presize(v any, counts []int) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return
	}
	st := rv.Elem()
	for i, n := range counts {
		if f := st.Field(i); n > 0 && f.Kind() == reflect.Slice && f.IsNil() && f.CanSet() {
			f.Set(reflect.MakeSlice(f.Type(), 0, n))
		}
	}
}

func decodeYAML(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return &Error{Problems: []string{"empty document"}}
	}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		return &Error{Problems: []string{strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		return &Error{Problems: []string{"more than one document in the input"}}
	}
	// Aliases may expand a small input into a huge tree: allow expansion to a few times
	// the input's own size, no more.
	w := walker{limit: 4*countNodes(&root) + 10_000}
	w.value(root.Content[0], reflect.ValueOf(v).Elem(), "")
	if len(w.problems) > 0 {
		return &Error{Problems: w.problems}
	}
	return nil
}

// walker decodes a YAML node tree into Go values, collecting problems with the field
// path at which they occur. Unknown fields and wrong types are problems; missing and
// out-of-range values are left to Validate, so JSON and YAML inputs get the same
// messages for them.
type walker struct {
	problems []string
	nodes    int
	limit    int
}

func countNodes(n *yaml.Node) int {
	c := 1
	for _, k := range n.Content {
		c += countNodes(k)
	}
	return c
}

func (w *walker) fail(path string, n *yaml.Node, format string, args ...any) {
	if len(w.problems) >= maxProblems {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if path == "" {
		path = "(document)"
	}
	w.problems = append(w.problems, fmt.Sprintf("%s: %s (line %d)", path, msg, n.Line))
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "null"
		case "!!str":
			return strconv.Quote(n.Value)
		}
		return n.Value
	}
	return "an unexpected node"
}

func (w *walker) value(n *yaml.Node, v reflect.Value, path string) {
	w.nodes++
	if w.nodes > w.limit {
		if w.nodes == w.limit+1 {
			w.fail(path, n, "aliases expand the document too much")
		}
		return
	}
	if n.Kind == yaml.AliasNode {
		w.value(n.Alias, v, path)
		return
	}
	if v.Kind() == reflect.Pointer {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			v.SetZero()
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		w.value(n, v.Elem(), path)
		return
	}
	if t := v.Type(); t.PkgPath() != "" && t.Kind() != reflect.Struct && reflect.PointerTo(t).Implements(textUnmarshaler) {
		if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
			w.fail(path, n, "want a number or a string, got %s", describe(n))
			return
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value)); err != nil {
			w.fail(path, n, "%v", err)
		}
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		w.object(n, v, path)
	case reflect.Slice:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			v.SetZero()
			return
		}
		if n.Kind != yaml.SequenceNode {
			w.fail(path, n, "want a list, got %s", describe(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			w.value(c, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case reflect.String:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
			w.fail(path, n, "want a string, got %s", describe(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			w.fail(path, n, "want true or false, got %s", describe(n))
			return
		}
		v.SetBool(n.Value == "true" || n.Value == "True" || n.Value == "TRUE")
	case reflect.Int:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			w.fail(path, n, "want a whole number, got %s", describe(n))
			return
		}
		i, err := strconv.ParseInt(n.Value, 0, 64)
		if err != nil {
			w.fail(path, n, "want a whole number, got %s", describe(n))
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!float" && n.Tag != "!!int") {
			w.fail(path, n, "want a number, got %s", describe(n))
			return
		}
		f, err := strconv.ParseFloat(n.Value, 64)
		if err != nil {
			var i int64
			if i, err = strconv.ParseInt(n.Value, 0, 64); err == nil {
				f = float64(i)
			}
		}
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			w.fail(path, n, "want a finite number, got %s", describe(n))
			return
		}
		v.SetFloat(f)
	default:
		panic("state: no decoder for " + v.Type().String())
	}
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

func (w *walker) object(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		w.fail(path, n, "want a mapping, got %s", describe(n))
		return
	}
	fields := fieldsOf(v.Type())
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		fp := k.Value
		if path != "" {
			fp = path + "." + k.Value
		}
		if k.Kind != yaml.ScalarNode {
			w.fail(path, k, "field names must be strings")
			continue
		}
		f, ok := fields.byName[k.Value]
		if !ok {
			w.fail(fp, k, "unknown field")
			continue
		}
		if seen[k.Value] {
			w.fail(fp, k, "field given twice")
			continue
		}
		seen[k.Value] = true
		w.value(val, v.Field(f.index), fp)
	}
}

// field is what the decoder, the validator and the schema generator know of a struct
// field, all read from its tags.
type field struct {
	name     string
	index    int
	doc      string
	required bool
	min, max *float64
	gt       *float64
	enum     []string
	typ      reflect.Type
	pos      int // in structInfo.list
}

type structInfo struct {
	list   []field
	byName map[string]field
	// visit lists, in order, the fields the validator looks at: those with bounds or an
	// enumeration, and those that hold structs (through a pointer or a slice).
	visit []int
}

var fieldCache sync.Map // reflect.Type -> *structInfo

func fieldsOf(t reflect.Type) *structInfo {
	if si, ok := fieldCache.Load(t); ok {
		return si.(*structInfo)
	}
	si := &structInfo{byName: map[string]field{}}
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		f := field{name: name, index: i, doc: sf.Tag.Get("doc"), required: sf.Tag.Get("required") == "true", typ: sf.Type, pos: len(si.list)}
		f.min = tagFloat(sf, "min")
		f.max = tagFloat(sf, "max")
		f.gt = tagFloat(sf, "gt")
		if e := sf.Tag.Get("enum"); e != "" {
			f.enum = strings.Split(e, ",")
		}
		k := sf.Type.Kind()
		if f.min != nil || f.max != nil || f.gt != nil || f.enum != nil || k == reflect.Struct || k == reflect.Pointer || k == reflect.Slice {
			si.visit = append(si.visit, f.pos)
		}
		si.list = append(si.list, f)
		si.byName[name] = f
	}
	fieldCache.Store(t, si)
	return si
}

func tagFloat(sf reflect.StructField, key string) *float64 {
	s, ok := sf.Tag.Lookup(key)
	if !ok {
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(fmt.Sprintf("state: bad %s tag on %s: %q", key, sf.Name, s))
	}
	return &f
}
