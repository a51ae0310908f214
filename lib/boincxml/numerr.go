package boincxml

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// NamedNumberError rewrites err, an error of d decoding body, when it is a number
// that did not parse (encoding/xml returns strconv's own error, "strconv.ParseInt:
// parsing "…": value out of range", which names no element): the rewritten error names
// the element's path below the root ("result[2].state", "file_upload.nbytes") and what
// was wrong. Any other error comes back as it is.
func NamedNumberError(body []byte, d *xml.Decoder, err error) error {
	var ne *strconv.NumError
	if !errors.As(err, &ne) {
		return err
	}
	path := elementEndingAt(body, d.InputOffset())
	if path == "" {
		path = "a number"
	}
	want := "a number"
	switch ne.Func {
	case "ParseInt", "ParseUint":
		want = "a whole number"
	case "ParseBool":
		want = "0 or 1"
	}
	if errors.Is(ne.Err, strconv.ErrRange) {
		return fmt.Errorf("%s: want %s in range, got %s", path, want, quoteShort(ne.Num))
	}
	return fmt.Errorf("%s: want %s, got %s", path, want, quoteShort(ne.Num))
}

// quoteShort quotes s, cut to 40 bytes: the value may be a megabyte of digits.
func quoteShort(s string) string {
	if len(s) > 40 {
		return strconv.Quote(s[:40]) + "…"
	}
	return strconv.Quote(s)
}

// elementEndingAt returns the path (below the root) of the first element of body whose
// end tag ends at or after offset: the element encoding/xml had just read when it
// failed. A name gets its index [i] when its parent has more than one of that name.
func elementEndingAt(body []byte, offset int64) string {
	type node struct {
		name   string
		index  int
		parent *node
		counts map[string]int
	}
	root := &node{counts: map[string]int{}}
	cur := root
	var found *node
	d := xml.NewDecoder(bytes.NewReader(body))
	d.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &node{name: t.Name.Local, index: cur.counts[t.Name.Local], parent: cur, counts: map[string]int{}}
			cur.counts[t.Name.Local]++
			cur = n
		case xml.EndElement:
			if found == nil && d.InputOffset() >= offset {
				found = cur
			}
			if cur.parent != nil {
				cur = cur.parent
			}
		}
	}
	if found == nil {
		return ""
	}
	var parts []string
	for n := found; n.parent != nil && n.parent.parent != nil; n = n.parent {
		p := n.name
		if n.parent.counts[n.name] > 1 {
			p += "[" + strconv.Itoa(n.index) + "]"
		}
		parts = append(parts, p)
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, ".")
}
