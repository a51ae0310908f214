package state

import (
	"bytes"
	"io"

	"go.yaml.in/yaml/v3"
)

// WriteLike writes doc as YAML with the comments of source,
// the YAML document it was read from, where the two have the same field or list element
// (a list element is matched by its name field, or else by its place): a hand-written
// document replaced with --in-place keeps its comments. If source is not YAML it is
// Write.
func WriteLike(w io.Writer, doc *Document, source []byte) error {
	var old yaml.Node
	if DetectFormat(source) != YAML || yaml.Unmarshal(source, &old) != nil {
		return Write(w, doc, YAML)
	}
	data, err := EncodeValue(doc, YAML)
	if err != nil {
		return err
	}
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return err
	}
	keepComments(&old, &n)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err = w.Write(b.Bytes())
	return err
}

// keepComments copies old's comments to n, and so on down the two trees
// where they agree.
func keepComments(old, n *yaml.Node) {
	if old.Kind != n.Kind {
		return
	}
	n.HeadComment, n.LineComment, n.FootComment = old.HeadComment, old.LineComment, old.FootComment
	switch n.Kind {
	case yaml.DocumentNode:
		if len(old.Content) > 0 && len(n.Content) > 0 {
			keepComments(old.Content[0], n.Content[0])
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			for j := 0; j+1 < len(old.Content); j += 2 {
				if old.Content[j].Value == n.Content[i].Value {
					keepComments(old.Content[j], n.Content[i])
					keepComments(old.Content[j+1], n.Content[i+1])
					break
				}
			}
		}
		if old.Style&yaml.FlowStyle != 0 && n.LineComment != "" && len(n.Content) >= 2 {
			// A one-line mapping's comment ({name: B}  # the second) goes after its
			// first line when it is written a field a line: else the encoder puts
			// it after the end of the mapping, on the next key.
			n.Content[1].LineComment, n.LineComment = n.LineComment, ""
		}
	case yaml.SequenceNode:
		for i, e := range n.Content {
			if o := sameElement(old.Content, e, i); o != nil {
				keepComments(o, e)
			}
		}
	}
}

// sameElement is the element of old that e, the i-th of the new list, stands for: the
// one with e's name, or if e has none, the i-th.
func sameElement(old []*yaml.Node, e *yaml.Node, i int) *yaml.Node {
	if name := mappingValue(e, "name"); name != "" {
		for _, o := range old {
			if mappingValue(o, "name") == name {
				return o
			}
		}
		return nil
	}
	if i < len(old) {
		return old[i]
	}
	return nil
}

func mappingValue(n *yaml.Node, key string) string {
	if n.Kind != yaml.MappingNode {
		return ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key && n.Content[i+1].Kind == yaml.ScalarNode {
			return n.Content[i+1].Value
		}
	}
	return ""
}
