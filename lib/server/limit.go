package server

import (
	"net"
	"net/netip"
)

// DefaultAccountRequestsPerMinute is how many account lookups and creations one
// client network may make in a minute (Config.AccountRequestsPerMinute), with as many
// at once: a person setting up a few clients needs far fewer, a password guesser far
// more.
const DefaultAccountRequestsPerMinute = 10

// accountNetwork is the address block whose bucket a client's account requests draw
// on (store.TakeAccountRequest): the /24 of an IPv4 address (IPv4-mapped IPv6 too) and
// the /64 of an IPv6 one, since a guesser is given a whole /64 by any provider and
// neighbouring IPv4 addresses are cheap to get; remote is host:port.
func accountNetwork(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.Unmap().WithZone("")
	bits := 64
	if addr.Is4() {
		bits = 24
	}
	p, _ := addr.Prefix(bits)
	return p.String()
}
