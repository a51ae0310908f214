// Package scratch owns the reuse of the buffers the policies keep between calls
// (cpusched, workfetch, prsc, goals, boincpolicy): a step of a simulated run asks each
// policy many times, and allocating its working slices afresh each time was most of
// a step's garbage.
package scratch

// Grow returns b with length n, every element zero, reusing its storage when it has
// room.
func Grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	b = b[:n]
	clear(b)
	return b
}
