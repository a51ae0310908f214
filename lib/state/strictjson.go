package state

import (
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
	s := keyScanner{data: data}
	s.ws()
	ok := s.value(t)
	return ok && !s.bad
}

type keyScanner struct {
	data []byte
	i    int
	bad  bool // malformed input where the decoder saw none: let the slow path judge
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

// keyPlan is what the scan needs of a Go type, worked out once per type.
type keyPlan struct {
	kind   reflect.Kind // Struct, Map, Slice, or Invalid for a value whose keys are not checked
	fields *structInfo
	nField int
	elem   reflect.Type // of a map or slice
}

var keyPlans sync.Map // reflect.Type -> *keyPlan

func planOf(t reflect.Type) *keyPlan {
	if p, ok := keyPlans.Load(t); ok {
		return p.(*keyPlan)
	}
	orig := t
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	p := &keyPlan{}
	custom := t.Kind() != reflect.Interface &&
		(reflect.PointerTo(t).Implements(jsonUnmarshalerType) || (t.Kind() != reflect.Struct && reflect.PointerTo(t).Implements(textUnmarshalerType)))
	switch {
	case custom: // its own decoder reads it
	case t.Kind() == reflect.Struct:
		p.kind, p.fields, p.nField = reflect.Struct, fieldsOf(t), t.NumField()
	case t.Kind() == reflect.Map:
		p.kind, p.elem = reflect.Map, t.Elem()
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		p.kind, p.elem = reflect.Slice, t.Elem()
	}
	keyPlans.Store(orig, p)
	return p
}

// value checks the value at s.i, of Go type t.
func (s *keyScanner) value(t reflect.Type) bool {
	p := planOf(t)
	switch s.peek() {
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
		if !s.value(f.typ) {
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

func (s *keyScanner) mapObject(elem reflect.Type) bool {
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

func (s *keyScanner) array(elem reflect.Type) bool {
	s.i++
	s.ws()
	if s.peek() == ']' {
		s.i++
		return true
	}
	for !s.bad {
		if !s.value(elem) {
			return false
		}
		if done, ok := s.next(']'); !ok {
			return false
		} else if done {
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
	escaped := false
	s.i++
	for s.i < len(s.data) && s.data[s.i] != '"' {
		if s.data[s.i] == '\\' {
			escaped = true
			s.i++
		}
		s.i++
	}
	if s.i >= len(s.data) {
		s.bad = true
		return nil, false
	}
	s.i++
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

func (s *keyScanner) str() {
	s.i++
	for s.i < len(s.data) && s.data[s.i] != '"' {
		if s.data[s.i] == '\\' {
			s.i++
		}
		s.i++
	}
	if s.i >= len(s.data) {
		s.bad = true
		return
	}
	s.i++
}
