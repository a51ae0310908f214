package server

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/store/storetest"
)

// TestAccountNetwork: IPv4 addresses share their /24 (mapped ones too), IPv6 ones
// their /64; a remote that is not an address stands for itself.
func TestAccountNetwork(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.1:5000":                   "10.0.0.0/24",
		"10.0.0.254:1":                    "10.0.0.0/24",
		"10.0.1.1:1":                      "10.0.1.0/24",
		"[::ffff:10.0.0.7]:1":             "10.0.0.0/24",
		"[2001:db8:1:2:3:4:5:6]:443":      "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1%eth0]:443": "2001:db8:1:2::/64",
		"@unix":                           "@unix",
	} {
		if got := accountNetwork(in); got != want {
			t.Errorf("accountNetwork(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestAccountLimitShared: two servers of one project (one database) give a network
// perMin account requests between them, not each; a neighbouring address of the same
// /24 or /64 draws on the same bucket; another network has its own. Both engines.
func TestAccountLimitShared(t *testing.T) {
	t.Parallel()
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			t.Parallel()
			st := storetest.Open(t, e.DSN)
			a := &Server{Store: st, Config: Config{AccountRequestsPerMinute: 4}}
			b := &Server{Store: st, Config: Config{AccountRequestsPerMinute: 4}}
			ask := func(s *Server, remote string) bool {
				r := httptest.NewRequest("GET", "/lookup_account.php", nil)
				r.RemoteAddr = remote
				w := httptest.NewRecorder()
				ok := s.accountAllowed(w, r)
				if !ok && !strings.Contains(w.Body.String(), "too many account requests") {
					t.Fatalf("refusal: %d %q", w.Code, w.Body.String())
				}
				return ok
			}
			allowed := 0
			for i, remote := range []string{"192.0.2.1:1", "192.0.2.2:1", "192.0.2.200:7", "192.0.2.1:2", "192.0.2.3:1", "192.0.2.4:1"} {
				s := a
				if i%2 == 1 {
					s = b
				}
				if ask(s, remote) {
					allowed++
				}
			}
			if allowed != 4 {
				t.Errorf("one /24 through two servers: %d requests allowed, want 4", allowed)
			}
			allowed = 0
			for _, remote := range []string{"[2001:db8::1]:1", "[2001:db8::2]:1", "[2001:db8::ffff]:1", "[2001:db8::1:1]:1", "[2001:db8::9]:1"} {
				if ask(b, remote) {
					allowed++
				}
			}
			if allowed != 4 {
				t.Errorf("one /64: %d requests allowed, want 4", allowed)
			}
			if !ask(a, "198.51.100.1:1") || !ask(a, "[2001:db8:0:1::1]:1") {
				t.Error("another network refused")
			}
		})
	}
}
