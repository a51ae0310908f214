package state

import (
	"bytes"
	"encoding"
	"reflect"
	"sync"

	json "github.com/goccy/go-json"
)

// jsonKeysExact reports whether every object key of data (valid JSON that decoded into
// a value of type t) names a field of its struct exactly once and in its exact case.
// encoding/json, and goccy/go-json with it, keeps the last of two equal keys and
// matches keys case-insensitively, so {"resource_share":75,"RESOURCE_SHARE":10}
// decodes with share 10; the YAML path refuses both, and documents are strict in either
// format. The scan walks the bytes beside the Go type and allocates nothing on the
// common path, so it costs little beside the decode itself. When it reports false, the
// caller runs the path-tracking decoder to say where the problem is.
func jsonKeysExact(data []byte, t reflect.Type) bool {
	ok, _ := jsonKeysExactCounts(data, t)
	return ok
}

// jsonKeysExactCounts is jsonKeysExact that also counts, when data is an object, the
// elements of each array given as one of its fields: counts[i] for the struct field of
// index i (-1: not an array). The decoder is handed slices of those capacities, so that
// it does not grow a 10,000-task list through a dozen copies.
func jsonKeysExactCounts(data []byte, t reflect.Type) (exact bool, counts []int) {
	s := keyScanner{data: data, depth: -1}
	s.ws()
	ok := s.value(planOf(t))
	return ok && !s.bad, s.counts
}

type keyScanner struct {
	data []byte
	i    int
	bad  bool // malformed input where the decoder saw none: let the slow path judge

	depth  int   // of the object being scanned, the outermost 0
	length int   // the elements of the array scanned last, -1 after any other value
	counts []int // of the outermost object's array fields, by field index
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func (s *keyScanner) ws() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

func (s *keyScanner) peek() byte {
	if s.i >= len(s.data) {
		s.bad = true
		return 0
	}
	return s.data[s.i]
}

// keyPlan is what the scan needs of a Go type, worked out once per type. Plans point to
// the plans of their fields and elements, so that the scan looks up no type as it goes.
type keyPlan struct {
	kind   reflect.Kind // Struct, Map, Slice, or Invalid for a value whose keys are not checked
	fields *structInfo
	nField int
	field  []*keyPlan // of fields.list[i]'s type
	elem   *keyPlan   // of a map's or slice's element type
}

var (
	keyPlans sync.Map   // reflect.Type -> *keyPlan, complete plans only
	planMu   sync.Mutex // held while plans are built
)

func planOf(t reflect.Type) *keyPlan {
	if p, ok := keyPlans.Load(t); ok {
		return p.(*keyPlan)
	}
	planMu.Lock()
	defer planMu.Unlock()
	building := map[reflect.Type]*keyPlan{}
	p := buildPlan(t, building)
	for t, p := range building { // published once complete, cycles and all
		keyPlans.Store(t, p)
	}
	return p
}

func buildPlan(t reflect.Type, building map[reflect.Type]*keyPlan) *keyPlan {
	if p, ok := keyPlans.Load(t); ok {
		return p.(*keyPlan)
	}
	if p, ok := building[t]; ok {
		return p
	}
	p := &keyPlan{}
	building[t] = p
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	custom := t.Kind() != reflect.Interface &&
		(reflect.PointerTo(t).Implements(jsonUnmarshalerType) || (t.Kind() != reflect.Struct && reflect.PointerTo(t).Implements(textUnmarshalerType)))
	switch {
	case custom: // its own decoder reads it
	case t.Kind() == reflect.Struct:
		p.kind, p.fields, p.nField = reflect.Struct, fieldsOf(t), t.NumField()
		p.field = make([]*keyPlan, len(p.fields.list))
		for i, f := range p.fields.list {
			p.field[i] = buildPlan(f.typ, building)
		}
	case t.Kind() == reflect.Map:
		p.kind, p.elem = reflect.Map, buildPlan(t.Elem(), building)
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		p.kind, p.elem = reflect.Slice, buildPlan(t.Elem(), building)
	}
	return p
}

// value checks the value at s.i, of the type planned by p.
func (s *keyScanner) value(p *keyPlan) bool {
	switch s.peek() {
	case 'n':
		// null: encoding/json leaves the field as it was, as if absent, where YAML's
		// null is refused for a number or string and empties a list or pointer. The
		// slow path decides, as YAML does.
		return false
	case '{':
		switch p.kind {
		case reflect.Struct:
			return s.object(p)
		case reflect.Map:
			return s.mapObject(p.elem)
		}
		return s.skip()
	case '[':
		if p.kind == reflect.Slice {
			return s.array(p.elem)
		}
		return s.skip()
	}
	return s.skip()
}

func (s *keyScanner) object(p *keyPlan) bool {
	s.depth++
	ok := s.members(p)
	s.depth--
	return ok
}

func (s *keyScanner) members(p *keyPlan) bool {
	if s.depth == 0 {
		s.counts = make([]int, p.nField)
		for i := range s.counts {
			s.counts[i] = -1
		}
	}
	fields := p.fields
	guess := 0
	var seenSmall uint64
	var seenBig []bool
	if p.nField > 64 {
		seenBig = make([]bool, p.nField)
	}
	s.i++ // {
	s.ws()
	if s.peek() == '}' {
		s.i++
		return true
	}
	for !s.bad {
		key, ok := s.key()
		if !ok {
			return false
		}
		// Documents list fields in the struct's order (Encode does): try the field after
		// the last one before the map.
		var f field
		if guess < len(fields.list) && fields.list[guess].name == string(key) {
			f = fields.list[guess]
			guess++
		} else {
			var known bool
			if f, known = fields.byName[string(key)]; !known {
				return false
			}
			guess = f.pos + 1
		}
		if seenBig != nil {
			if seenBig[f.index] {
				return false
			}
			seenBig[f.index] = true
		} else {
			if seenSmall&(1<<f.index) != 0 {
				return false
			}
			seenSmall |= 1 << f.index
		}
		s.length = -1
		if !s.value(p.field[f.pos]) {
			return false
		}
		if s.depth == 0 {
			s.counts[f.index] = s.length
		}
		if done, ok := s.next('}'); !ok {
			return false
		} else if done {
			return true
		}
	}
	return false
}

func (s *keyScanner) mapObject(elem *keyPlan) bool {
	seen := map[string]bool{}
	s.i++
	s.ws()
	if s.peek() == '}' {
		s.i++
		return true
	}
	for !s.bad {
		key, ok := s.key()
		if !ok || seen[string(key)] {
			return false
		}
		seen[string(key)] = true
		if !s.value(elem) {
			return false
		}
		if done, ok := s.next('}'); !ok {
			return false
		} else if done {
			return true
		}
	}
	return false
}

func (s *keyScanner) array(elem *keyPlan) bool {
	s.i++
	s.ws()
	if s.peek() == ']' {
		s.i++
		s.length = 0
		return true
	}
	for n := 1; !s.bad; n++ {
		if !s.value(elem) {
			return false
		}
		if done, ok := s.next(']'); !ok {
			return false
		} else if done {
			s.length = n
			return true
		}
	}
	return false
}

// next moves past the ',' between members, or the closing byte (done).
func (s *keyScanner) next(closing byte) (done, ok bool) {
	s.ws()
	switch s.peek() {
	case ',':
		s.i++
		s.ws()
		return false, true
	case closing:
		s.i++
		return true, true
	}
	s.bad = true
	return false, false
}

// key reads an object key and the ':' after it. A key with escapes is unescaped
// (rare: only a crafted input writes one).
func (s *keyScanner) key() ([]byte, bool) {
	if s.peek() != '"' {
		s.bad = true
		return nil, false
	}
	start := s.i
	escaped := s.str()
	if s.bad {
		return nil, false
	}
	raw := s.data[start:s.i]
	key := raw[1 : len(raw)-1]
	if escaped {
		var k string
		if err := json.Unmarshal(raw, &k); err != nil {
			s.bad = true
			return nil, false
		}
		key = []byte(k)
	}
	s.ws()
	if s.peek() != ':' {
		s.bad = true
		return nil, false
	}
	s.i++
	s.ws()
	return key, true
}

// skip moves past one value of any kind; its keys are not checked.
func (s *keyScanner) skip() bool {
	switch s.peek() {
	case '{', '[':
		depth := 0
		for s.i < len(s.data) {
			switch s.data[s.i] {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			case '"':
				s.str()
				continue
			}
			s.i++
		}
		s.bad = true
		return false
	case '"':
		s.str()
		return !s.bad
	}
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return true
		}
		s.i++
	}
	return true
}

// str moves past the string at s.i and reports whether it holds an escape.
func (s *keyScanner) str() (escaped bool) {
	s.i++
	for {
		// The closing quote is the next one unless a backslash comes before it.
		q := bytes.IndexByte(s.data[s.i:], '"')
		if q < 0 {
			s.i = len(s.data)
			s.bad = true
			return escaped
		}
		b := bytes.IndexByte(s.data[s.i:s.i+q], '\\')
		if b < 0 {
			s.i += q + 1
			return escaped
		}
		escaped = true
		s.i += b + 2 // past the backslash and the character it escapes
		if s.i > len(s.data) {
			s.i = len(s.data)
			s.bad = true
			return escaped
		}
	}
}
