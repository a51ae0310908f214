package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBOINCEmulatorExact: under --emulate boinc, policy boinc at seed 1 is BOINC's
// emulator's run, figure for figure to the six decimals that emulator prints, on
// scenarios that use what the corpus's generator never makes (testdata/boinc-exact's
// README: no <time_stats>, <time_stats> among the projects, a culled project with a
// server process, max_concurrent, multithreaded versions, other periods and buffers,
// max_ncpus_pct, an Intel GPU). Each scenario's figures are one run of BOINC's
// emulator, so a rule, a draw or a draw's order that parts from it shows here.
func TestBOINCEmulatorExact(t *testing.T) {
	t.Parallel()
	dirs, err := filepath.Glob("testdata/boinc-exact/c*")
	if err != nil || len(dirs) < 20 {
		t.Fatalf("testdata/boinc-exact: %d scenarios (%v), want the 23 of its README", len(dirs), err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(filepath.Join(dir, "boinc_figures.txt"))
			if err != nil {
				t.Fatal(err)
			}
			var want string
			for _, line := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(line, "wf ") {
					want = line
				}
			}
			if want == "" {
				t.Fatalf("%s: no figures line", dir)
			}
			res, err := Run(load(t, dir), Config{Duration: 864000, Delta: 60, Policy: BOINCPolicy, Seed: 1, EmulateBOINC: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.OneLine(); got != want {
				t.Errorf("bsim   %s\nBOINC  %s", got, want)
			}
		})
	}
}
