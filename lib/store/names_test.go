package store_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/store"
)

// TestValidName: ValidName is the expression its comment gives, on names at and
// around every bound and with every kind of byte in every place.
func TestValidName(t *testing.T) {
	names := []string{"", "a", "Z9", "wu_1_0_0", "_a", ".a", "-a", "a b", "a/b", "a\x00", "é", "aé", "../x", "a..b", "a" + strings.Repeat("é", 100)}
	for _, n := range []int{99, 100, 101, 199, 200, 201, 250, 251, 252} {
		names = append(names, strings.Repeat("a", n))
	}
	for c := 0; c < 256; c++ {
		names = append(names, string(rune(c)), "a"+string([]byte{byte(c)}), string([]byte{byte(c)})+"a")
	}
	for _, max := range []int{100, 200, store.MaxFileNameLen} {
		re := regexp.MustCompile(fmt.Sprintf(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,%d}$`, max-1))
		for _, name := range names {
			if got, want := store.ValidName(name, max), re.MatchString(name); got != want {
				t.Errorf("ValidName(%q, %d) = %v, want %v", name, max, got, want)
			}
		}
	}
}
