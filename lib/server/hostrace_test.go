package server_test

import (
	"context"
	"sync"
	"testing"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store/storetest"
)

// TestSimultaneousFirstRequests: a BOINC client whose first request (account key, no
// host id) is sent several times at once, as a client retrying over a slow link or two
// front ends do, gets one host: every reply names it, and the user has no other
// (issue 28: 6 of 20 clients got two hosts on MariaDB). Each round is a new client.
func TestSimultaneousFirstRequests(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := storetest.Open(t, dsn)
		user, err := st.AddUser(ctx, "alice", "", 1)
		if err != nil {
			t.Fatal(err)
		}
		srv := &server.Server{Store: st}
		const rounds, copies = 5, 8
		for round := range rounds {
			ids := make([]int64, copies)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range copies {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req := boincxml.SchedulerRequest{Authenticator: user.Authenticator, RPCSeqno: 1,
						HostInfo: boincxml.HostInfo{PNCPUs: 1, PFpops: 1e9, HostCPID: "cpid" + string(rune('a'+round))}}
					<-start
					rep, err := srv.Handle(ctx, &req, 100, "http://127.0.0.1/")
					if err != nil {
						t.Errorf("round %d copy %d: %v", round, i, err)
						return
					}
					ids[i] = rep.HostID
				}()
			}
			close(start)
			wg.Wait()
			for _, id := range ids {
				if id != ids[0] || id == 0 {
					t.Errorf("round %d: replies name hosts %v, want one", round, ids)
					break
				}
			}
		}
		users, err := st.Users(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(users) != 1 || users[0].Hosts != rounds {
			t.Errorf("user has %d hosts after %d clients' first requests, want %d", users[0].Hosts, rounds, rounds)
		}
	})
}
