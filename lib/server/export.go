package server

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/tempfile"
)

// The statistics export (issue 31): the files statistics sites download from a
// project, in the form BOINC's db_dump writes them (sched/db_dump.cpp): user.gz,
// host.gz and team.gz (gzipped XML, one element per account, host or team) and
// tables.xml (the counts and the time of the export). bkit has no teams: team.gz
// holds none.

// ExportSummary counts what ExportStats wrote.
type ExportSummary struct {
	Users, Hosts int64
}

func (s ExportSummary) String() string {
	return fmt.Sprintf("exported %d users, %d hosts, 0 teams", s.Users, s.Hosts)
}

// RowsHandled is what a run records (bserver.RecordRun).
func (s ExportSummary) RowsHandled() int64 { return s.Users + s.Hosts }

// ExportStats writes the statistics export of st into dir at now. Each file is written
// under a temporary name, synced and renamed, so a statistics site downloading while
// an export runs gets the last whole file, never half of one. The temporary files of
// an export that was killed are removed by the next (those of one still running,
// which holds them locked, are left to it), so two exports at once and a SIGKILL at
// any moment leave whole files and no litter.
func ExportStats(ctx context.Context, st *store.Store, dir string, now float64) (ExportSummary, error) {
	var sum ExportSummary
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return sum, err
	}
	if _, err := tempfile.RemoveOrphans(dir, func(name string) bool { return strings.HasPrefix(name, exportTemp) }); err != nil {
		return sum, err
	}
	err := writeAtomic(dir, "user.gz", true, func(w io.Writer) error {
		fmt.Fprint(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<users>\n")
		err := st.EachUser(ctx, func(u store.VolunteerUser) error {
			sum.Users++
			fmt.Fprintf(w, "<user>\n <id>%d</id>\n <name>%s</name>\n <create_time>%d</create_time>\n"+
				" <total_credit>%s</total_credit>\n <expavg_credit>%s</expavg_credit>\n <expavg_time>%s</expavg_time>\n <cpid>%s</cpid>\n</user>\n",
				u.ID, escapeXML(u.Name), int64(u.CreateTime), num(u.TotalCredit), num(u.ExpavgCredit), num(u.ExpavgTime), UserCPID(u))
			return nil
		})
		fmt.Fprint(w, "</users>\n")
		return err
	})
	if err != nil {
		return sum, err
	}
	err = writeAtomic(dir, "host.gz", true, func(w io.Writer) error {
		fmt.Fprint(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<hosts>\n")
		err := st.EachHost(ctx, func(h store.VolunteerHost) error {
			sum.Hosts++
			fmt.Fprintf(w, "<host>\n    <id>%d</id>\n", h.ID)
			if h.UserID != 0 {
				fmt.Fprintf(w, "    <userid>%d</userid>\n", h.UserID)
			}
			// bkit does not keep the processor's vendor and model or the operating
			// system: the elements are there, empty, as BOINC writes a host that did not
			// say.
			fmt.Fprintf(w, "    <total_credit>%s</total_credit>\n    <expavg_credit>%s</expavg_credit>\n    <expavg_time>%s</expavg_time>\n"+
				"    <p_vendor></p_vendor>\n    <p_model></p_model>\n    <os_name></os_name>\n    <os_version></os_version>\n",
				num(h.TotalCredit), num(h.ExpavgCredit), num(h.ExpavgTime))
			if h.Coprocs != "" {
				fmt.Fprintf(w, "    <coprocs>%s</coprocs>\n", escapeXML(h.Coprocs))
			}
			fmt.Fprintf(w, "  <create_time>%d</create_time>\n  <rpc_time>%d</rpc_time>\n  <ncpus>%d</ncpus>\n  <p_fpops>%s</p_fpops>\n  <m_nbytes>%s</m_nbytes>\n",
				int64(h.CreateTime), int64(h.RPCTime), h.PNCPUs, num(h.PFpops), num(h.MNBytes))
			if c := HostCPID(h); c != "" {
				fmt.Fprintf(w, "  <host_cpid>%s</host_cpid>\n", c)
			}
			fmt.Fprint(w, "</host>\n")
			return nil
		})
		fmt.Fprint(w, "</hosts>\n")
		return err
	})
	if err != nil {
		return sum, err
	}
	if err := writeAtomic(dir, "team.gz", true, func(w io.Writer) error {
		_, err := fmt.Fprint(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<teams>\n</teams>\n")
		return err
	}); err != nil {
		return sum, err
	}
	total, err := st.TotalCredit(ctx)
	if err != nil {
		return sum, err
	}
	err = writeAtomic(dir, "tables.xml", false, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "<tables>\n    <update_time>%d</update_time>\n    <nusers>%d</nusers>\n    <nteams>0</nteams>\n    <nhosts>%d</nhosts>\n    <total_credit>%s</total_credit>\n</tables>\n",
			int64(now), sum.Users, sum.Hosts, num(total))
		return err
	})
	return sum, err
}

// UserCPID is the cross-project id the export gives an account: as BOINC's, the MD5
// of a secret of the account's and its e-mail address (BOINC's secret is a random
// cross_project_id; bkit's is the account key, which MD5 does not give away).
func UserCPID(u store.VolunteerUser) string {
	sum := md5.Sum([]byte(u.Authenticator + u.EmailAddr))
	return hex.EncodeToString(sum[:])
}

// HostCPID is the host's public cross-project id: as BOINC's, the MD5 of the id the
// client chose and its owner's e-mail address ("" when the client sent none).
func HostCPID(h store.VolunteerHost) string {
	if h.HostCPID == "" {
		return ""
	}
	sum := md5.Sum([]byte(h.HostCPID + h.UserEmail))
	return hex.EncodeToString(sum[:])
}

// num writes a number as db_dump's %f does.
func num(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }

// escapeXML escapes text for an XML element; characters XML cannot hold (control
// characters) become U+FFFD.
func escapeXML(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// exportTemp begins the names of the export's temporary files.
const exportTemp = ".tmp-"

// writeAtomic writes dir/name through write (gzipped with gz) under a temporary name,
// created locked (lib/tempfile), syncs it and renames it into place.
func writeAtomic(dir, name string, gz bool, write func(io.Writer) error) (err error) {
	f, err := tempfile.Create(dir, exportTemp+name+"-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<16)
	var w io.Writer = bw
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(bw)
		w = zw
	}
	if err = write(w); err != nil {
		return err
	}
	if zw != nil {
		if err = zw.Close(); err != nil {
			return err
		}
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	// Renamed before it is closed: closing drops the lock, and a sweep by another
	// export would take the unlocked temporary file for an orphan.
	if err = os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	return f.Close()
}
