package sim

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bkit/bkit/lib/boincxml"
)

// publicExample is the shared example scenario, relative to this package.
const publicExample = "../../../shared/scenarios/example-2cpu-2to1"

func load(t testing.TB, dir string) *boincxml.Scenario {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "client_state.xml")); err != nil {
		t.Skipf("scenario %s not available: %v", dir, err)
	}
	sc, err := boincxml.LoadScenario(dir)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestPublicExample(t *testing.T) {
	for _, pol := range []string{"seed", "rr"} {
		res, err := Run(load(t, publicExample), Config{Duration: 10 * 86400, Delta: 60, Policy: pol, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s jain %f rpcs %d jobs %d", pol, res.OneLine(), res.JainIndex, res.RPCs, res.Jobs)
		for _, p := range res.Projects {
			t.Logf("  %+v", p)
		}
	}
}
