package server_test

import (
	"compress/gzip"
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"testing"

	"github.com/bkit/bkit/lib/server"
)

// readGz parses dir/name (gzipped XML) into v.
func readGz(t *testing.T, dir, name string, v any) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := xml.NewDecoder(zr).Decode(v); err != nil {
		t.Fatalf("%s: not XML: %v", name, err)
	}
}

// TestExportStats writes the statistics export of volunteers with hostile names and
// reads it back with an XML parser: every user and host is there with the database's
// credit, the names come back as they were chosen, and nothing else is left in the
// directory.
func TestExportStats(t *testing.T) {
	t.Parallel()
	forEngine(t, func(t *testing.T, dsn string) {
		e := start(t, dsn, server.Config{}, 0)
		ids := volunteers(t, e.st)
		anonymousHost(t, e.st) // a bkit host of no account (--anonymous-hosts)
		dir := filepath.Join(t.TempDir(), "stats")
		sum, err := server.ExportStats(context.Background(), e.st, dir, 1234)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Users != int64(len(ids)) || sum.Hosts != int64(2*len(ids)+1) {
			t.Errorf("summary %+v", sum)
		}
		var users struct {
			User []struct {
				ID          int64   `xml:"id"`
				Name        string  `xml:"name"`
				TotalCredit float64 `xml:"total_credit"`
				CPID        string  `xml:"cpid"`
			} `xml:"user"`
		}
		readGz(t, dir, "user.gz", &users)
		if len(users.User) != len(ids) {
			t.Fatalf("user.gz: %d users, want %d", len(users.User), len(ids))
		}
		for i, u := range users.User {
			var total float64
			if err := e.st.DB.QueryRow(`SELECT total_credit FROM user WHERE id=?`, u.ID).Scan(&total); err != nil {
				t.Fatal(err)
			}
			if u.ID != ids[i] || u.Name != hostileNames[i] || u.TotalCredit != total || len(u.CPID) != 32 {
				t.Errorf("user.gz user %d: %+v, want name %q, total credit %v", i, u, hostileNames[i], total)
			}
		}
		var hosts struct {
			Host []struct {
				ID          int64   `xml:"id"`
				UserID      int64   `xml:"userid"`
				TotalCredit float64 `xml:"total_credit"`
				RPCTime     int64   `xml:"rpc_time"`
			} `xml:"host"`
		}
		readGz(t, dir, "host.gz", &hosts)
		if len(hosts.Host) != 2*len(ids)+1 {
			t.Fatalf("host.gz: %d hosts", len(hosts.Host))
		}
		for _, h := range hosts.Host {
			var userid int64
			var total, rpc float64
			if err := e.st.DB.QueryRow(`SELECT userid, total_credit, rpc_time FROM host WHERE id=?`, h.ID).Scan(&userid, &total, &rpc); err != nil {
				t.Fatal(err)
			}
			if h.UserID != userid || h.TotalCredit != total || h.RPCTime != int64(rpc) {
				t.Errorf("host.gz host %d: %+v, database userid %d, credit %v, rpc_time %v", h.ID, h, userid, total, rpc)
			}
		}
		var teams struct {
			XMLName xml.Name
			Team    []struct{} `xml:"team"`
		}
		readGz(t, dir, "team.gz", &teams)
		if teams.XMLName.Local != "teams" || len(teams.Team) != 0 {
			t.Errorf("team.gz: %+v", teams)
		}
		var tables struct {
			Update int64 `xml:"update_time"`
			NUsers int64 `xml:"nusers"`
			NHosts int64 `xml:"nhosts"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "tables.xml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := xml.Unmarshal(b, &tables); err != nil || tables.Update != 1234 || tables.NUsers != sum.Users || tables.NHosts != sum.Hosts {
			t.Errorf("tables.xml: %+v, %v", tables, err)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 4 {
			t.Errorf("the export directory holds %d entries, want the 4 files (no temporary ones)", len(entries))
		}
	})
}
