package bsim

import (
	"context"
	"fmt"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/sim"
	"github.com/urfave/cli/v3"
)

func figuresCommand() *cli.Command {
	return &cli.Command{
		Name:      "figures",
		Usage:     "print the figures of merit of a run carried from program to program",
		UsageText: "bsim figures --world FILE --state FILE [-o table|json]",
		Description: cliutil.Help(`
Prints what 'bsim run' prints, for the run so far.

`+loopNote, []string{"bsim figures --world w.json --state state.json -o json"}, ""),
		Flags:  []cli.Flag{worldFlag(), &cli.StringFlag{Name: cliutil.FlagState, Usage: "the run's state document, `FILE`", Required: true}, cliutil.FormatFlag("table", "json"), cliutil.MaxInputFlag()},
		Action: runFigures,
	}
}

func runFigures(_ context.Context, cmd *cli.Command) error {
	if err := cliutil.NoArgs(cmd); err != nil {
		return err
	}
	w, err := readWorld(cmd)
	if err != nil {
		return err
	}
	in, err := cliutil.ReadState(cmd)
	if err != nil {
		return err
	}
	s, err := sim.Restore(in.Doc, w)
	if err != nil {
		return cliutil.BadInput(fmt.Errorf("%s and %s: %w", cmd.String(flagWorld), in.File, err))
	}
	cfg := sim.Config{Duration: w.Duration, Delta: w.Delta, Policy: w.Policy, Seed: w.Seed, ThreeState: w.ThreeState, EmulateBOINC: w.EmulateBOINC}
	return printResult(cmd, w.Scenario, cfg, s.Result())
}
