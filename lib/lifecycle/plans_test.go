package lifecycle_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bkit/bkit/lib/lifecycle"
	"github.com/bkit/bkit/lib/store"
)

// TestLifecyclePlans runs an assimilate, a delete-files and a purge pass on a database
// the size of planScale's (lib/server: 8,000 workunits, some of each stage's ready and
// most of them not), records every statement they run, and fails on any whose plan
// reads the whole of workunit or result (store.FullScans): a pass's cost must follow
// its backlog, not the project's history. Both engines, MariaDB with its statistics
// taken again after the history is made (as InnoDB's would be some time after); on
// MariaDB a scan fails, a keyed read estimated large is logged (see below). The
// purge window's reads, outside any transaction, are traced too: the window walked
// every unclaimed file-deleted workunit in id order, the young ones too, until
// migration 20 (it walks those old enough by file_delete_time).
func TestLifecyclePlans(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, engine, dsn string) {
		ctx := context.Background()
		p := newProject(t, dsn, 0)
		if err := p.s.Populate(ctx, store.PopulateSpec{App: "sim", Hosts: 100, Done: 7000, InProgress: 500, Unsent: 500}, created); err != nil {
			t.Fatal(err)
		}
		// The history: assimilated and cleaned lately, all but 300 of the finished.
		hist := created + 28*86400
		p.exec(t, `UPDATE workunit SET assimilate_state=2, assimilate_time=?, file_delete_state=2, file_delete_time=? WHERE id>300 AND canonical_resultid<>0`, hist, hist)
		if engine == store.MySQL {
			// Statistics as InnoDB's would be some time after (Populate analysed the
			// tables before the history was made).
			rows, err := p.s.DB.QueryContext(ctx, `ANALYZE TABLE workunit, result`)
			if err != nil {
				t.Fatal(err)
			}
			rows.Close()
		}
		var mu sync.Mutex
		seen := map[string][]any{}
		var order []string
		p.s.TraceStatements(func(q string, args []any) {
			mu.Lock()
			defer mu.Unlock()
			if _, ok := seen[q]; !ok {
				seen[q] = slices.Clone(args)
				order = append(order, q)
			}
		})
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		a := &lifecycle.Assimilator{Store: p.s, UploadDir: filepath.Join(p.dir, "upload"), To: filepath.Join(p.dir, "results"),
			Clock: lifecycle.NewClock(created + 86400), Owner: lifecycle.Owner(), Lease: 600, Log: log}
		if sum, err := a.Run(ctx); err != nil || sum.Assimilated != 300 {
			t.Fatalf("assimilate: %v, %v", sum, err)
		}
		d := &lifecycle.FileDeleter{Store: p.s, UploadDir: filepath.Join(p.dir, "upload"), DownloadDir: filepath.Join(p.dir, "download"),
			Clock: lifecycle.NewClock(created + 2*86400), Log: log}
		if sum, err := d.Run(ctx); err != nil || sum.Workunits != 300 {
			t.Fatalf("delete-files: %v, %v", sum, err)
		}
		pu := &lifecycle.Purger{Store: p.s, Archive: filepath.Join(p.dir, "archive"), OlderThan: 5 * 86400, Batch: 100,
			Clock: lifecycle.NewClock(created + 30*86400), Owner: lifecycle.Owner(), Lease: 600, Log: log}
		if sum, err := pu.Run(ctx); err != nil || sum.Workunits != 300 {
			t.Fatalf("purge: %v, %v", sum, err)
		}
		p.s.TraceStatements(nil)
		var scans []string
		for _, q := range order {
			found, err := p.s.FullScans(ctx, q, seen[q], "workunit", "result")
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range found {
				if engine == store.MySQL && (strings.Contains(f, " type=range key=") || strings.Contains(f, " type=ref key=")) {
					// A read by a key that InnoDB estimates large: on this small database
					// the passes have just rewritten or deleted most rows the estimate's
					// index dives count (delete-marked until InnoDB's purge thread
					// catches up), so the assimilation claim's range was estimated at
					// 3,325 rows for none, now and then. Only scans (ALL, index) fail here.
					t.Logf("MariaDB estimates a keyed read large (not failed): %s\n    %s", strings.Join(strings.Fields(q), " "), f)
					continue
				}
				scans = append(scans, fmt.Sprintf("%s\n    %s", strings.Join(strings.Fields(q), " "), f))
			}
		}
		if len(scans) > 0 {
			t.Errorf("%d statements of the lifecycle passes read all of workunit or result:\n%s", len(scans), strings.Join(scans, "\n"))
		}
		if engine == store.SQLite {
			for _, q := range order {
				if bad := byIDList(t, p.s, q, seen[q]); bad != "" {
					t.Errorf("reads workunits named by an id list through another index (SQLite estimates an equality on an index's columns below an id list; the range may be the whole backlog):\n%s\n    %s",
						strings.Join(strings.Fields(q), " "), bad)
				}
			}
		}
		t.Logf("%d distinct statements checked", len(order))
	})
}

// workunitByIDs is a statement that names the workunits it reads by a list of ids.
var workunitByIDs = regexp.MustCompile(`(?s)^\s*(UPDATE workunit SET|SELECT .* FROM workunit( w)? WHERE).*\b(w\.)?id IN \(`)

// byIDList returns the step of SQLite's plan for q that reads workunit by another
// index than its primary key (or one with the id in its key: a look-up per id) although
// q names the workunits by an id list, or "".
// Without statistics SQLite rates an equality on an index's columns
// (file_delete_state=? AND purge_batch=0) as more selective than an id list of any
// length, and walked what such an index holds of the whole backlog, per batch: most
// of issue 27's benchmark passes. FullScans does not see it (a SEARCH, not a SCAN).
func byIDList(t *testing.T, s *store.Store, q string, args []any) string {
	t.Helper()
	if !workunitByIDs.MatchString(q) {
		return ""
	}
	rows, err := s.DB.Query(`EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, q)
	}
	defer rows.Close()
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(detail)
		if len(f) >= 2 && (f[1] == "workunit" || f[1] == "w") && f[0] == "SEARCH" &&
			!strings.Contains(detail, "INTEGER PRIMARY KEY") && !strings.Contains(detail, "rowid=?") {
			return detail
		}
	}
	return ""
}
