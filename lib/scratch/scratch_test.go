package scratch

import "testing"

// TestGrow: a buffer with room is reused and zeroed; one without is replaced.
func TestGrow(t *testing.T) {
	b := make([]int, 3, 8)
	b[0], b[1], b[2] = 1, 2, 3
	g := Grow(b, 5)
	if len(g) != 5 || &g[0] != &b[0] {
		t.Fatalf("len %d, reused %v", len(g), &g[0] == &b[0])
	}
	for i, v := range g {
		if v != 0 {
			t.Errorf("element %d is %d, want 0", i, v)
		}
	}
	if g := Grow(b, 9); len(g) != 9 || cap(g) < 9 {
		t.Errorf("len %d cap %d, want 9", len(g), cap(g))
	}
}
