package lifecycle_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/filetree"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
	"github.com/google/go-cmp/cmp"
)

// TestDeleteFiles: files go after assimilation and the delay, only when no result
// is unsent or in progress; an input file shared by all workunits stays until the
// last of them has its files deleted; every deletion is recorded.
func TestDeleteFiles(t *testing.T) {
	t.Parallel()
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			t.Parallel()
			p := newProject(t, e.DSN, 8)
			upload := filepath.Join(p.dir, "upload")
			if out := p.must(t, "--now", passAt, "delete-files", "--once", "--delay", "0"); out != "workunits 0, files deleted 0 (0 bytes), refused 0\n" {
				t.Fatalf("before assimilation: %q", out)
			}
			p.must(t, "--now", passAt, "assimilate", "--exec", "true", "--once")
			if out := p.must(t, "--now", "1103599", "delete-files", "--once"); out != "workunits 0, files deleted 0 (0 bytes), refused 0\n" {
				t.Fatalf("within the delay: %q", out)
			}
			// Workunits 1, 4, 5, 8: over. 2 and 6 have a result in progress; 3 and 7
			// are not assimilated.
			out := p.must(t, "--now", "1103601", "delete-files", "--once", "--batch", "3")
			if out != "workunits 4, files deleted 4 (52 bytes), refused 0\n" {
				t.Fatalf("after the delay: %q", out)
			}
			var want []string
			for _, i := range []int{1, 5} {
				want = append(want, filetree.Path(p.names[i]+"_0_0"))
			}
			if diff := cmp.Diff(want, keys(readTree(t, upload)), cmpSorted); diff != "" {
				t.Errorf("upload tree (-want +got):\n%s", diff)
			}
			if _, err := os.Stat(filepath.Join(p.dir, "download", "shared_in")); err != nil {
				t.Errorf("the shared input went while workunits still read it: %v", err)
			}
			if got := p.rows(t, `SELECT workunitid, directory, name, done FROM deleted_file`); !cmp.Equal(got, []string{
				"4 upload " + p.names[3] + "_0_0 1", "4 upload " + p.names[3] + "_1_0 1",
				"8 upload " + p.names[7] + "_0_0 1", "8 upload " + p.names[7] + "_1_0 1"}) {
				t.Errorf("recorded: %v", got)
			}
			// The rest finish: every file goes, the shared input last.
			p.exec(t, `UPDATE result SET server_state=5, outcome=1 WHERE server_state IN (2, 4)`)
			p.exec(t, `UPDATE workunit SET error_mask=8 WHERE canonical_resultid=0 AND error_mask=0`)
			p.must(t, "--now", "1103601", "assimilate", "--exec", "true", "--once")
			if out := p.must(t, "--now", "1107202", "delete-files", "--once"); out != "workunits 4, files deleted 3 (35 bytes), refused 0\n" {
				t.Fatalf("the rest: %q", out)
			}
			if left := readTree(t, p.dir+"/upload"); len(left) != 0 {
				t.Errorf("left in upload: %v", left)
			}
			if _, err := os.Stat(filepath.Join(p.dir, "download", "shared_in")); err == nil {
				t.Errorf("the shared input stayed")
			}
			st := p.must(t, "status")
			if !strings.Contains(st, "file deletion: 0 waiting, 8 done, 0 files pending") {
				t.Errorf("status:\n%s", st)
			}
		})
	}
}

// TestDeleteFilesHostile: a recorded name that leads out of the upload directory is
// refused and recorded so; what it names stays.
func TestDeleteFilesHostile(t *testing.T) {
	t.Parallel()
	p := newProject(t, storetest.SQLiteDSN(t), 4)
	os.WriteFile(filepath.Join(p.dir, "secret"), []byte("secret"), 0o644)
	p.must(t, "--now", passAt, "assimilate", "--exec", "true", "--once")
	p.exec(t, `UPDATE result_file SET name='../secret' WHERE name=?`, p.names[3]+"_1_0")
	if out := p.must(t, "--now", "1200000", "delete-files", "--once"); out != "workunits 2, files deleted 1 (15 bytes), refused 1\n" {
		t.Fatalf("pass: %q", out)
	}
	if _, err := os.Stat(filepath.Join(p.dir, "secret")); err != nil {
		t.Errorf("the file outside the upload directory: %v", err)
	}
	if got := p.rows(t, `SELECT name, done, message FROM deleted_file WHERE message<>''`); !cmp.Equal(got, []string{"../secret 1 refused: not a file name of the upload directory"}) {
		t.Errorf("recorded: %v", got)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestDeleteFilesLateUpload: an output file a timed-out result uploads after its
// workunit's files were deleted (the handler takes a late result's files) is
// recorded for deletion at once and goes at the next pass; the 4h-step soak left
// such files in upload/ for ever.
func TestDeleteFilesLateUpload(t *testing.T) {
	t.Parallel()
	for _, e := range storetest.Engines(t) {
		t.Run(e.Name, func(t *testing.T) {
			e.Require(t)
			t.Parallel()
			p := newProject(t, e.DSN, 4)
			// Workunit 1 (given up): its result 1 timed out on host 3 instead.
			p.exec(t, `UPDATE result SET outcome=4, hostid=3 WHERE id=2`)
			p.must(t, "--now", passAt, "assimilate", "--exec", "true", "--once")
			if out := p.must(t, "--now", "1200000", "delete-files", "--once"); out != "workunits 2, files deleted 2 (26 bytes), refused 0\n" {
				t.Fatalf("first pass: %q", out)
			}
			late := p.names[0] + "_1"
			p.upload(t, 2, late, 0, "late")
			err := p.s.InTx(context.Background(), func(tx *store.Tx) error {
				f, err := tx.LockOutputFile(2, 0)
				if err != nil {
					return err
				}
				return tx.RecordUpload(store.UploadedFile{ResultID: f.ResultID, FileNum: 0, Name: late + "_0", NBytes: 4, UploadTime: 1200100})
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := p.rows(t, `SELECT workunitid, name, done FROM deleted_file WHERE done=0`); !cmp.Equal(got, []string{"1 " + late + "_0 0"}) {
				t.Errorf("pending after the late upload: %v", got)
			}
			if out := p.must(t, "--now", "1200200", "delete-files", "--once"); out != "workunits 0, files deleted 1 (4 bytes), refused 0\n" {
				t.Fatalf("second pass: %q", out)
			}
			if _, ok := readTree(t, filepath.Join(p.dir, "upload"))[filetree.Path(late+"_0")]; ok {
				t.Errorf("the late upload stayed")
			}
		})
	}
}
