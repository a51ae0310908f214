package sim

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/golden-figures.json from this run")

// goldenRuns are the runs whose figures are pinned to the last bit: every scenario of
// the repository, both policies, two seeds, three step lengths and one long run. Work
// done for speed (skipped passes, reused buffers, cached look-ups) must leave every one
// of these numbers as it was.
func goldenRuns() []goldenRun {
	var runs []goldenRun
	for _, dir := range []string{
		"../../scenarios/example-2cpu-2to1", "../../scenarios/deadlines-4cpu", "../../scenarios/down-2cpu",
		"../../scenarios/part-time-4cpu", seed002GPU, share7525, "testdata/noisy",
	} {
		for _, pol := range []string{"seed", "rr"} {
			for _, seed := range []uint64{1, 2} {
				runs = append(runs, goldenRun{dir, pol, seed, 3 * 86400, 60})
			}
			runs = append(runs, goldenRun{dir, pol, 3, 86400, 17}, goldenRun{dir, pol, 3, 4 * 86400, 300})
		}
	}
	return append(runs, goldenRun{"../../scenarios/example-2cpu-2to1", "seed", 1, 60 * 86400, 60},
		goldenRun{"testdata/noisy", "seed", 5, 30 * 86400, 60})
}

type goldenRun struct {
	dir      string
	policy   string
	seed     uint64
	duration float64
	delta    float64
}

func (g goldenRun) key() string {
	return fmt.Sprintf("%s %s seed %d %gs/%gs", strings.TrimPrefix(g.dir, "../../"), g.policy, g.seed, g.duration, g.delta)
}

// goldenFigures is a run's figures with the counts behind them.
type goldenFigures struct {
	Figures                   Result
	RPCs, MasterFetches, Jobs int
	TotalFlops, UsedFlops     float64
}

// normal is f as it reads back from JSON (the fields Result keeps out of JSON are
// recorded beside it).
func (f goldenFigures) normal(t *testing.T) goldenFigures {
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var n goldenFigures
	if err := json.Unmarshal(b, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestGoldenFigures compares every golden run's figures with testdata/golden-figures.json.
// A change of figures that is meant (a policy's rule changed) is recorded with
// 'go test ./lib/sim -run TestGoldenFigures -update' and says so in its commit.
func TestGoldenFigures(t *testing.T) {
	t.Parallel()
	runs := goldenRuns()
	got := make(map[string]goldenFigures, len(runs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, g := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			res, err := Run(load(t, g.dir), Config{Duration: g.duration, Delta: g.delta, Policy: g.policy, Seed: g.seed})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got[g.key()] = goldenFigures{*res, res.RPCs, res.MasterFetches, res.Jobs, res.TotalFlops, res.UsedFlops}.normal(t)
			mu.Unlock()
		}()
	}
	wg.Wait()
	const file = "testdata/golden-figures.json"
	if *update {
		b, err := json.MarshalIndent(got, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]goldenFigures
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for _, g := range runs {
		w, ok := want[g.key()]
		if !ok {
			t.Errorf("%s: not in %s (-update records it)", g.key(), file)
			continue
		}
		if d := cmp.Diff(w, got[g.key()]); d != "" {
			t.Errorf("%s: figures changed (-want +got; -update records a change that is meant):\n%s", g.key(), d)
		}
	}
}
