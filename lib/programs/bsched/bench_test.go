package bsched_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/bkit/bkit/lib/programs/bsched"
	"github.com/bkit/bkit/lib/state"
)

// BenchmarkMainJSON is the whole program in-process on a 100-project, 10,000-task,
// 16-CPU JSON document: decode, validate, one pass, encode.
func BenchmarkMainJSON(b *testing.B) {
	data, err := state.Encode(state.Synthetic(100, 10000, 16), state.JSON)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if code := bsched.Main([]string{"bsched", "--now", "1700000000"}, bytes.NewReader(data), io.Discard, io.Discard); code != 0 {
			b.Fatalf("exit status %d", code)
		}
	}
}
