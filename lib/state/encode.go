package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

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
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	case YAML:
		var n yaml.Node
		if err := n.Encode(doc); err != nil {
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
