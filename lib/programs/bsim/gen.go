package bsim

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/corpus"
	"github.com/urfave/cli/v3"
)

const (
	flagCount = "count"
	flagFirst = "first"
)

func genCommand() *cli.Command {
	return &cli.Command{
		Name:      "gen",
		Usage:     "generate a corpus of scenario directories in BOINC's emulator's format",
		UsageText: "bsim gen DIR [--seed N] [--count N] [--first I]",
		Description: cliutil.Help(`
Writes scenarios --first to --first+--count−1 of the corpus of --seed into DIR, one
directory each (DIR/c000, DIR/c001, ...) holding client_state.xml and
global_prefs.xml as BOINC's client emulator reads them. A scenario is a function of
the seed and its index alone: the same seed and index give the same files, byte for
byte, whatever --count. The space (lib/corpus): 1-16 CPUs; no GPU or one or two GPU
types at 1-20x a CPU whose app versions take 0-1 CPU; 1-6 projects with shares
1-1000; CPU-only, GPU-only and mixed apps; job run times 5 minutes to 24 hours;
latency 1.2-30x the run time; estimates 50 % low to 50 % high, with noise; the host on
0.2-1 of the time in spells of 1-40 hours, active and GPU-active fractions; project
servers up 0.3-1 of the time; work buffers 0.01-1 day each (min and additional).
A draw whose client would hold more than 150 jobs to fill its buffers is drawn again.

A directory already there keeps its other files, except that BOINC's figures
(`+BOINCFigures+`) are removed when its client_state.xml changes: they were for
another scenario. Run BOINC's emulator on each directory for its figures
(scenarios/corpus/README.md says how), then 'bsim compare DIR/*'.`,
			[]string{
				"bsim gen scenarios/corpus --seed 1 --count 200",
				"bsim gen /tmp/more --seed 2 --count 50 --first 200",
			}, ""),
		Flags: []cli.Flag{
			cliutil.SeedFlag(),
			&cli.IntFlag{Name: flagCount, Value: 200, Usage: "how many scenarios, `N`"},
			&cli.IntFlag{Name: flagFirst, Value: 0, Usage: "the index of the first scenario, `I`"},
		},
		Action: runGen,
	}
}

func runGen(_ context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() != 1 {
		return cliutil.Usagef("want one DIR to write the scenarios into, got %d arguments (see 'bsim gen --help')", cmd.Args().Len())
	}
	count, first := cmd.Int(flagCount), cmd.Int(flagFirst)
	if count < 1 || count > 100000 {
		return cliutil.Usagef("--count: want 1 to 100000 scenarios, got %d", count)
	}
	if first < 0 || first > 1000000 {
		return cliutil.Usagef("--first: want an index from 0 to 1000000, got %d", first)
	}
	dir := cmd.Args().First()
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return cliutil.Usagef("%s is not a directory", dir)
	}
	seed := cmd.Uint64(cliutil.FlagSeed)
	for i := first; i < first+count; i++ {
		sc := corpus.Generate(seed, i)
		d := filepath.Join(dir, sc.Name())
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		files := sc.Files()
		old, err := os.ReadFile(filepath.Join(d, corpus.ClientState))
		if err == nil && !bytes.Equal(old, files[corpus.ClientState]) {
			figures := filepath.Join(d, BOINCFigures)
			if err := os.Remove(figures); err == nil {
				fmt.Fprintf(cmd.Root().ErrWriter, "bsim: %s: removed: its scenario changed\n", figures)
			} else if !os.IsNotExist(err) {
				return err
			}
		}
		for _, name := range []string{corpus.ClientState, corpus.GlobalPrefs} {
			if err := cliutil.WriteFileAtomic(filepath.Join(d, name), files[name]); err != nil {
				return err
			}
		}
	}
	return nil
}
