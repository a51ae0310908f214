package server

import (
	"context"
	"log/slog"
	"net"
	"sync"
)

// DefaultMaxRPCsInFlight bounds the scheduler requests parsed and handled at once
// (Config.MaxRPCsInFlight), over all clients. A request of 4 MiB (the body limit)
// holds some 35 MB while it is parsed and answered (110,000 reported results: their
// structures, the reply's acknowledgements); 32 of them at once from one address held
// 1.2 GB, and the per-address connection limit does not bound many addresses. Bodies
// are read before the turn is taken, so a client trickling its body holds no turn; on
// SQLite the requests' transactions take turns on one connection anyway.
const DefaultMaxRPCsInFlight = 16

// rpcTurn waits for one of the turns Config.MaxRPCsInFlight allows and returns its
// release (which may be called more than once), or false when ctx ends first (the
// client went away). The caller releases the turn before it writes a large reply: a
// client that does not read its reply would hold the turn until the write time-out.
func (s *Server) rpcTurn(ctx context.Context) (func(), bool) {
	s.rpcTurnsOnce.Do(func() {
		if n := orDefault(s.Config.MaxRPCsInFlight, DefaultMaxRPCsInFlight); n > 0 {
			s.rpcTurns = make(chan struct{}, n)
		}
	})
	if s.rpcTurns == nil {
		return func() {}, true
	}
	select {
	case s.rpcTurns <- struct{}{}:
		return sync.OnceFunc(func() { <-s.rpcTurns }), true
	case <-ctx.Done():
		return nil, false
	}
}

// DefaultMaxConnsPerAddr bounds the connections one client address may hold open at
// once (Config.MaxConnsPerAddr). A BOINC client uses a few (its scheduler request and
// up to its max_file_xfers_per_project, 2 by default, transfers per project), so it
// leaves room for many clients behind one NAT; 320 trickling connections from one
// address exhausted a server's 300 file descriptors (issue 28).
const DefaultMaxConnsPerAddr = 64

// addrLimit is a listener that closes, at once, a connection from an address that
// already holds max open ones: before a byte is read, so a hostile client's spare
// connections cost nothing but the accept.
type addrLimit struct {
	net.Listener
	max int
	log *slog.Logger

	mu     sync.Mutex
	open   map[string]int
	warned map[string]bool // refused since it was last below the cap (logged once)
}

func limitPerAddr(ln net.Listener, max int, log *slog.Logger) net.Listener {
	return &addrLimit{Listener: ln, max: max, log: log, open: map[string]int{}, warned: map[string]bool{}}
}

func (l *addrLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host, _, err := net.SplitHostPort(c.RemoteAddr().String())
		if err != nil {
			host = c.RemoteAddr().String()
		}
		l.mu.Lock()
		if l.open[host] >= l.max {
			first := !l.warned[host]
			l.warned[host] = true
			l.mu.Unlock()
			c.Close()
			if first {
				l.log.Warn("connection refused", "reason", "too many open from this address", "remote", host, "limit", l.max)
			}
			continue
		}
		l.open[host]++
		l.mu.Unlock()
		return &limitedConn{Conn: c, release: func() { l.release(host) }}, nil
	}
}

func (l *addrLimit) release(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[host]--; l.open[host] <= 0 {
		delete(l.open, host)
	}
	delete(l.warned, host)
}

// limitedConn gives its place back when it is closed, once.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
