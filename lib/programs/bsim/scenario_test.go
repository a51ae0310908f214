package bsim

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/limits"
	"github.com/bkit/bkit/lib/scenario"
	"github.com/bkit/bkit/lib/state"
)

// noisyDir is lib/sim's noisy BOINC scenario: availability processes, several apps,
// weights, estimate spread.
const noisyDir = "../../sim/testdata/noisy"

func mustRead(t *testing.T, path string) *scenario.Scenario {
	t.Helper()
	f, err := readScenario(path, limits.DocumentBytes)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestExport: the export of a directory loads back as the directory's scenario in its
// canonical form, and a file is re-encoded in the other format.
func TestExport(t *testing.T) {
	data, err := exportScenario(noisyDir, state.YAML, limits.DocumentBytes)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), "# bkit scenario file (docs/scenario-file.md), converted from "+noisyDir+"\nversion: 1\n") {
		t.Errorf("export starts\n%.200s", data)
	}
	for _, want := range []string{"lambdas:\n  \"on\": 7200\n", "servers:\n  - project: A\n    available:\n      frac: 0.8\n      lambda: 10000\n", "weight: 3\n"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("export lacks %q:\n%s", want, data)
		}
	}
	back, err := scenario.Decode(data, "noisy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// reflect.DeepEqual, not go-cmp: this test binary is also every program that
	// client_loop*.txtar runs, hundreds of times each, and go-cmp's package
	// initialisation (regular expressions) was about a twentieth of each run's CPU.
	dir := mustRead(t, noisyDir).Canonical()
	dir.Dir = back.Dir // not compared: the directory's scenario has one, the export's has none
	if !reflect.DeepEqual(dir, back) {
		t.Errorf("the export read back differs from the directory's scenario:\ndir    %+v\nexport %+v", dir, back)
	}

	js, err := exportScenario("../../../scenarios/seed002-gpu.yaml", state.JSON, limits.DocumentBytes)
	if err != nil {
		t.Fatal(err)
	}
	if state.DetectFormat(js) != state.JSON || !strings.Contains(string(js), `"duration": "30d"`) {
		t.Errorf("JSON export:\n%s", js)
	}
	back, err = scenario.Decode(js, "seed002.json")
	if err != nil {
		t.Fatal(err)
	}
	if duration, delta := back.RunDefaults(); duration != 30*86400 || delta != 0 {
		t.Errorf("run defaults %g, %g", duration, delta)
	}
}

// TestExportDropsVersionlessApps: a directory may declare an app without a version;
// its jobs can never be made, so the reader leaves it out, as BOINC's emulator does,
// and the file stays loadable.
func TestExportDropsVersionlessApps(t *testing.T) {
	dir := t.TempDir()
	xml := `<client_state>
<host_info><p_ncpus>1</p_ncpus><p_fpops>1e9</p_fpops></host_info>
<project><master_url>http://a/</master_url><project_name>A</project_name></project>
<app><name>a</name><latency_bound>86400</latency_bound><fpops_est>1e12</fpops_est></app>
<app><name>idle</name><latency_bound>86400</latency_bound><fpops_est>1e12</fpops_est></app>
<app_version><app_name>a</app_name><avg_ncpus>1</avg_ncpus><flops>1e9</flops></app_version>
</client_state>
`
	if err := os.WriteFile(filepath.Join(dir, "client_state.xml"), []byte(xml), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := exportScenario(dir, state.YAML, limits.DocumentBytes)
	if err != nil {
		t.Fatal(err)
	}
	f, err := scenario.Decode(data, "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Apps) != 1 || f.Apps[0].Name != "a" {
		t.Errorf("apps %+v", f.Apps)
	}
	// Encode itself refuses what Decode would.
	sc := mustRead(t, dir)
	sc.Apps = append(sc.Apps, scenario.App{Project: "A", Name: "idle", LatencyBound: 86400, FpopsEst: 1e12})
	if _, err := scenario.Encode(sc, state.YAML); err == nil || !strings.Contains(err.Error(), `apps[1].name: no app version of app "idle" in project "A" in state.app_versions`) {
		t.Errorf("encode: %v", err)
	}
}

// TestReadScenarioErrors: invalid input is a usage error (exit status 2) naming the file; a
// missing path too; an unreadable file is an I/O error (status 1).
func TestReadScenarioErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nstate: null\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badDir := filepath.Join(dir, "baddir")
	if err := os.Mkdir(badDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(badDir, "client_state.xml"), []byte("<client_state><host_info></host_info></client_state>"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, want string
		status     int
	}{
		{bad, bad + ": state: missing: the client state document", 2},
		{filepath.Join(dir, "none.yaml"), filepath.Join(dir, "none.yaml") + ": no such file or directory", 2},
		{dir, filepath.Join(dir, "client_state.xml") + ": no such file or directory", 2},
		{badDir, filepath.Join(badDir, "client_state.xml") + ": host_info: missing <p_ncpus>", 2},
	} {
		_, err := readScenario(c.path, limits.DocumentBytes)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("readScenario(%s): %v, want %q", c.path, err, c.want)
		}
		if s := cliutil.ExitStatus(err); s != c.status {
			t.Errorf("readScenario(%s): exit status %d, want %d", c.path, s, c.status)
		}
	}
	var se *state.Error
	if _, err := readScenario(bad, limits.DocumentBytes); !errors.As(err, &se) || se.File != bad {
		t.Errorf("readScenario(%s): %v is no *state.Error of the file", bad, err)
	}

	if os.Getuid() == 0 {
		t.Skip("root reads unreadable files")
	}
	locked := filepath.Join(dir, "locked.yaml")
	if err := os.WriteFile(locked, []byte("version: 1\n"), 0o000); err != nil {
		t.Fatal(err)
	}
	_, err := readScenario(locked, limits.DocumentBytes)
	if err == nil || err.Error() != locked+": permission denied" || cliutil.ExitStatus(err) != 1 {
		t.Errorf("readScenario(%s): %v (status %d), want a permission error, status 1", locked, err, cliutil.ExitStatus(err))
	}
}
