package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/programs/bdevices"
	"github.com/bkit/bkit/lib/programs/bfetch"
	"github.com/bkit/bkit/lib/programs/blocality"
	"github.com/bkit/bkit/lib/programs/bretry"
	"github.com/bkit/bkit/lib/programs/brpc"
	"github.com/bkit/bkit/lib/programs/bsched"
	"github.com/bkit/bkit/lib/programs/bserver"
	"github.com/bkit/bkit/lib/programs/bsim"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

// programs are the toolkit's programs the test binary runs as, when started under
// their name: the loop then runs the real programs without building them first.
var programs = map[string]func([]string, io.Reader, io.Writer, io.Writer) int{
	"bserver": bserver.Main, "bretry": bretry.Main, "blocality": blocality.Main, "bsim": bsim.Main,
	"bfetch": bfetch.Main, "bdevices": bdevices.Main, "bsched": bsched.Main, "brpc": brpc.Main,
}

func TestMain(m *testing.M) {
	if main, ok := programs[filepath.Base(os.Args[0])]; ok {
		os.Exit(main(os.Args, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// binDir is a directory of links named after the programs to the test binary.
func binDir(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name := range programs {
		if err := os.Symlink(exe, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestFullLoop runs a short loop (four clients: a plain one, one with a GPU, one that goes
// offline and loses its work, one attached to both projects; six simulated hours in
// hour-long steps, which still lose, retry, give up and validate work) and checks its invariants (Summary.Broken, see invariants and
// client.step): on SQLite with project A's front end SIGKILLed in the middle of a
// step and restarted, and on MySQL/MariaDB with two front ends on A's database.
func TestFullLoop(t *testing.T) {
	bin := binDir(t)
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			t.Parallel() // each engine's run has its own databases and directories
			cfg := Config{Bin: bin, Clients: 4, Duration: 6 * 3600, Delta: 3600, FrontEnds: 1, Seed: 1, Output: "json", Keep: t.TempDir()}
			if e.Name == "sqlite" {
				cfg.KillAt = 2 * 3600
			} else {
				cfg.DB, cfg.DB2, cfg.FrontEnds = e.DSN, storetest.MySQLDSN(t), 2
			}
			var progress bytes.Buffer
			sum, err := Run(context.Background(), cfg, &progress)
			if err != nil {
				t.Fatalf("%v\nprogress:\n%s", err, progress.String())
			}
			var table strings.Builder
			sum.Table(&table)
			t.Logf("progress:\n%s\n%s", progress.String(), table.String())
			for _, b := range sum.Broken {
				t.Errorf("invariant broken: %s", b)
			}
			a, b := sum.Projects[0], sum.Projects[1]
			// The loop did something of every kind it is there to show.
			switch {
			case a.Reported == 0 || a.Validated == 0 || b.Reported == 0:
				t.Errorf("nothing reported or validated: A %+v, B %+v", a, b)
			case sum.Offline == 0 || a.Lost == 0 || a.Retried == 0:
				t.Errorf("the offline client lost %d tasks; project A: %d lost, %d retried: want some of each", sum.Offline, a.Lost, a.Retried)
			case a.GivenUp == 0:
				t.Errorf("no workunit of the nondeterministic app was given up: %+v", a)
			case sum.Batch.Sent == 0:
				t.Errorf("no locality job was sent: %+v", sum.Batch)
			case sum.Server.RPCs == 0 || len(sum.Figures) != cfg.Clients:
				t.Errorf("server RPCs %d, client figures %d", sum.Server.RPCs, len(sum.Figures))
			case cfg.KillAt > 0 && sum.Kills != 1:
				t.Errorf("front end killed %d times, want 1", sum.Kills)
			}
			if e.Name == "sqlite" {
				brokenOnPurpose(t, "sqlite:"+filepath.Join(cfg.Keep, "A", "project.db"))
			}
		})
	}
}

// brokenOnPurpose checks that the invariants see what they are there to see: on the
// database of a run, a report acknowledged but not recorded, a result still in progress
// past its deadline, and a workunit in error without its wu_giveup row.
func brokenOnPurpose(t *testing.T, dsn string) {
	ctx := context.Background()
	db, err := store.OpenInitialised(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var reported, given string
	q := fmt.Sprintf(`SELECT name FROM result WHERE outcome = %d ORDER BY id LIMIT 1`, store.OutcomeSuccess)
	if err := db.DB.QueryRowContext(ctx, q).Scan(&reported); err != nil {
		t.Fatal(err)
	}
	if err := db.DB.QueryRowContext(ctx, `SELECT w.name FROM workunit w JOIN wu_giveup g ON g.workunitid = w.id LIMIT 1`).Scan(&given); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		fmt.Sprintf(`UPDATE result SET outcome = %d, server_state = %d WHERE name = '%s'`, store.OutcomeInit, store.ServerStateInProgress, reported),
		fmt.Sprintf(`DELETE FROM wu_giveup WHERE workunitid = (SELECT id FROM workunit WHERE name = '%s')`, given),
	} {
		if _, err := db.DB.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	l := &loop{end: start + 6*3600, acked: map[string]ack{reported: {client: "c01-quad", project: "A"}}}
	if err := l.invariants(ctx, db, "A"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"the report of " + reported + " by c01-quad was acknowledged but is not recorded",
		"result " + reported + " is in progress past its deadline",
		"workunit " + given + " is in error without a wu_giveup row",
	} {
		if !slices.ContainsFunc(l.broken, func(b string) bool { return strings.Contains(b, want) }) {
			t.Errorf("invariants on a database broken on purpose: %q not among %q", want, l.broken)
		}
	}
}
