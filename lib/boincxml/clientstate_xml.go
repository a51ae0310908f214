package boincxml

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bkit/bkit/lib/state"
)

// This file holds the small element tree that the client_state.xml import and the
// scenario reader work on: BOINC's state files are read in element order, and a tree
// keeps that order while letting each element's handler look at all its children.

// elem is one XML element: its name, its own text (trimmed) and its child elements in
// file order.
type elem struct {
	name string
	text string
	kids []*elem
	line int
}

// maxTreeDepth bounds the nesting readTree accepts; BOINC's files nest four deep.
const maxTreeDepth = 64

// readTree parses a whole XML document into a tree and returns its root element.
// Unknown entities (BOINC writes HTML ones now and then) are read as HTML would, and
// ISO-8859-1 documents are accepted.
func readTree(r io.Reader) (*elem, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	d := xml.NewDecoder(bytes.NewReader(laxComments(b)))
	d.Entity = xml.HTMLEntity
	d.CharsetReader = charsetReader
	var stack []*elem
	var texts [][]byte
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil, errors.New("no root element")
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) >= maxTreeDepth {
				return nil, fmt.Errorf("elements nested more than %d deep", maxTreeDepth)
			}
			line, _ := d.InputPos()
			e := &elem{name: t.Name.Local, line: line}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.kids = append(p.kids, e)
			}
			stack = append(stack, e)
			texts = append(texts, nil)
		case xml.CharData:
			if len(stack) > 0 {
				texts[len(texts)-1] = append(texts[len(texts)-1], t...)
			}
		case xml.EndElement:
			e := stack[len(stack)-1]
			e.text = strings.TrimSpace(string(texts[len(texts)-1]))
			stack, texts = stack[:len(stack)-1], texts[:len(texts)-1]
			if len(stack) == 0 {
				return e, nil // what follows the root element is not read
			}
		}
	}
}

// laxComments blanks the text of every XML comment (keeping its line breaks, so lines
// in messages stay right): BOINC's parsers skip comments without looking inside, so
// "--" in one (cc_config.xml files carry "<!-- -1 disables -->" and the like) is
// accepted there, where Go's strict decoder refuses it.
func laxComments(b []byte) []byte {
	open, end := []byte("<!--"), []byte("-->")
	i := bytes.Index(b, open)
	if i < 0 {
		return b
	}
	out := bytes.Clone(b)
	for i >= 0 {
		start := i + len(open)
		j := bytes.Index(out[start:], end)
		if j < 0 {
			return out // the decoder will report the unclosed comment
		}
		for k := start; k < start+j; k++ {
			if out[k] != '\n' {
				out[k] = ' '
			}
		}
		next := bytes.Index(out[start+j+len(end):], open)
		if next < 0 {
			break
		}
		i = start + j + len(end) + next
	}
	return out
}

// charsetReader accepts the encodings BOINC's files declare.
func charsetReader(label string, in io.Reader) (io.Reader, error) {
	switch strings.ToLower(label) {
	case "utf-8", "utf8", "us-ascii", "ascii":
		return in, nil
	case "iso-8859-1", "iso8859-1", "latin1", "latin-1":
		return &latin1Reader{r: bufio.NewReader(in)}, nil
	}
	return nil, fmt.Errorf("unsupported encoding %q", label)
}

// latin1Reader converts ISO-8859-1 bytes to UTF-8.
type latin1Reader struct {
	r   *bufio.Reader
	buf []byte
}

func (l *latin1Reader) Read(p []byte) (int, error) {
	for len(l.buf) < len(p) {
		b, err := l.r.ReadByte()
		if err != nil {
			if len(l.buf) > 0 {
				break
			}
			return 0, err
		}
		l.buf = utf8.AppendRune(l.buf, rune(b))
	}
	n := copy(p, l.buf)
	l.buf = l.buf[n:]
	return n, nil
}

// child returns the first child named name, or nil.
func (e *elem) child(name string) *elem {
	for _, k := range e.kids {
		if k.name == name {
			return k
		}
	}
	return nil
}

// childText is the text of the first child named name ("" when absent).
func (e *elem) childText(name string) string {
	if k := e.child(name); k != nil {
		return k.text
	}
	return ""
}

// flag reads a BOINC boolean: <x/> or <x>1</x> is true, <x>0</x> false.
func (e *elem) flag() bool {
	return e.text != "0" && !strings.EqualFold(e.text, "false")
}

// number parses the element's text as a finite float.
func (e *elem) number() (float64, error) {
	x, err := strconv.ParseFloat(e.text, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("<%s>: %q is not a number", e.name, e.text)
	}
	return x, nil
}

// nonNeg parses a finite float that must be >= 0.
func (e *elem) nonNeg() (float64, error) {
	x, err := e.number()
	if err == nil && x < 0 {
		err = fmt.Errorf("<%s>: must be >= 0, got %g", e.name, x)
	}
	return x, err
}

// fraction parses a finite float in [0, 1].
func (e *elem) fraction() (float64, error) {
	x, err := e.number()
	if err == nil && (x < 0 || x > 1) {
		err = fmt.Errorf("<%s>: must be between 0 and 1, got %g", e.name, x)
	}
	return x, err
}

// dcf parses a duration correction factor: a finite float in [0, state.MaxDCF].
func (e *elem) dcf() (float64, error) {
	x, err := e.number()
	if err == nil && (x < 0 || x > state.MaxDCF) {
		err = fmt.Errorf("<%s>: must be between 0 and %g, got %g", e.name, float64(state.MaxDCF), x)
	}
	return x, err
}

// integer parses a whole number in [0, max].
func (e *elem) integer(max int) (int, error) {
	x, err := e.number()
	if err != nil {
		return 0, err
	}
	if x != math.Trunc(x) || x < 0 || x > float64(max) {
		return 0, fmt.Errorf("<%s>: must be a whole number from 0 to %d, got %s", e.name, max, e.text)
	}
	return int(x), nil
}
