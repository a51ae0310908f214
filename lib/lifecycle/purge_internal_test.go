package lifecycle

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPurgeCutBackNeverExtends: batches recorded as being written are cut back to the
// smallest size any recorded for each file, and a file already shorter (an earlier cut
// interrupted) is left as it is, never extended with zeros.
func TestPurgeCutBackNeverExtends(t *testing.T) {
	got := firstSizes(map[string]int64{"a": 30, "b": 10}, map[string]int64{"a": 50, "c": 0}, map[string]int64{"b": 40})
	if diff := cmp.Diff(map[string]int64{"a": 30, "b": 10, "c": 0}, got); diff != "" {
		t.Errorf("firstSizes (-want +got):\n%s", diff)
	}
	a, err := openArchive(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	day := "2026-11-28"
	os.Mkdir(filepath.Join(a.dir, day), 0o755)
	short, long := day+"/result.jsonl.gz", day+"/workunit.jsonl.gz"
	os.WriteFile(filepath.Join(a.dir, short), make([]byte, 20), 0o644)
	os.WriteFile(filepath.Join(a.dir, long), make([]byte, 90), 0o644)
	if err := a.cutBack(map[string]int64{short: 50, long: 60, day + "/wu_file.jsonl.gz": 70}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int64{short: 20, long: 60} {
		if fi, err := os.Stat(filepath.Join(a.dir, name)); err != nil || fi.Size() != want {
			t.Errorf("%s: %v, %v; want %d bytes", name, fi, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(a.dir, day, "wu_file.jsonl.gz")); !os.IsNotExist(err) {
		t.Errorf("a missing file was made: %v", err)
	}
}
