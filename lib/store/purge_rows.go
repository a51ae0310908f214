package store

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The archive's encoding of a purged row: one JSON object a line (purge.go reads the
// rows, these write them).

// archiveRows reads the rows of a query as JSON lines; ids, when not nil, gets the
// first column of each (the id).
func archiveRows(query func(string, ...any) (*sql.Rows, error), ids *[]int64, q string, args ...any) (ArchiveTable, error) {
	var at ArchiveTable
	rows, err := query(q, args...)
	if err != nil {
		return at, err
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return at, err
	}
	kinds := make([]byte, len(types))
	names := make([][]byte, len(types))
	for i, ct := range types {
		names[i], _ = json.Marshal(ct.Name())
		switch t := strings.ToUpper(ct.DatabaseTypeName()); {
		case strings.Contains(t, "INT"):
			kinds[i] = 'i'
		case strings.Contains(t, "DOUBLE") || strings.Contains(t, "REAL") || strings.Contains(t, "FLOAT") || strings.Contains(t, "DECIMAL"):
			kinds[i] = 'f'
		default:
			kinds[i] = 's'
		}
	}
	vals := make([]any, len(types))
	ptrs := make([]any, len(types))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var buf bytes.Buffer
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return at, err
		}
		buf.WriteByte('{')
		for i, v := range vals {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.Write(names[i])
			buf.WriteByte(':')
			if err := appendValue(&buf, kinds[i], v); err != nil {
				return at, fmt.Errorf("%s: %w", types[i].Name(), err)
			}
			if i == 0 && ids != nil {
				id, err := asInt(v)
				if err != nil {
					return at, err
				}
				*ids = append(*ids, id)
			}
		}
		buf.WriteString("}\n")
		at.Rows++
	}
	at.Lines = buf.Bytes()
	return at, rows.Err()
}

// appendValue writes a column's value as JSON. The engines hand values over
// differently (SQLite: int64, float64, string; MySQL's text protocol: bytes), so the
// column's declared type says what it is.
func appendValue(buf *bytes.Buffer, kind byte, v any) error {
	if v == nil {
		buf.WriteString("null")
		return nil
	}
	switch kind {
	case 'i':
		n, err := asInt(v)
		if err != nil {
			return err
		}
		buf.WriteString(strconv.FormatInt(n, 10))
		return nil
	case 'f':
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case int64:
			f = float64(x)
		case []byte:
			var err error
			if f, err = strconv.ParseFloat(string(x), 64); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected %T", v)
		}
		return appendJSONFloat(buf, f)
	}
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case []byte:
		s = string(x)
	default:
		s = fmt.Sprint(x)
	}
	appendJSONString(buf, s)
	return nil
}

// appendJSONFloat writes f as encoding/json does, without its reflection and
// allocations (formatting the values was a quarter of reading a purge batch, which
// a pass does twice per batch, once in its deleting transaction).
func appendJSONFloat(buf *bytes.Buffer, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("unsupported value: %v", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	var a [32]byte
	b := strconv.AppendFloat(a[:0], f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	buf.Write(b)
	return nil
}

// appendJSONString writes s as encoding/json does: directly when it holds only
// printable ASCII that needs no escape (names, digests: nearly every value), else
// through json.Marshal.
func appendJSONString(buf *bytes.Buffer, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			buf.Write(b)
			return
		}
	}
	buf.WriteByte('"')
	buf.WriteString(s)
	buf.WriteByte('"')
}

func asInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case float64:
		return int64(x), nil
	case []byte:
		return strconv.ParseInt(string(x), 10, 64)
	}
	return 0, fmt.Errorf("unexpected %T for an integer", v)
}

// PurgeWrite is a batch about to be appended to the archive: the sizes of its files
// before (JSON: name → bytes).
type PurgeWrite struct {
	Batch int64
	Files string
}
