package bsim

import (
	"context"
	"fmt"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/sim"
	"github.com/bkit/bkit/lib/state"
	"github.com/urfave/cli/v3"
)

func initCommand() *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "start a run carried from program to program: write its state document and world file",
		UsageText: "bsim init SCENARIO --world FILE [--duration D] [--delta S] [--seed N] [--policy seed|goals] [-o json|yaml] > state.json",
		Description: cliutil.Help(`
Loads SCENARIO as 'bsim run' does and writes the run's starting state document on
standard output and its world file to --world. --policy is the client policy the
stage programs run (give them the same --policy): seed or goals; the world records it,
and bsim advance accounts for each step as that policy does. rr runs only in 'bsim
run', since it keeps its round-robin turns in memory, and --emulate boinc only in 'bsim
run' and 'bsim compare', since the loop's stages take bsim's own step order. See 'bsim
run --help' for the scenario and the step.

--live: the projects' servers are real (bserver serve), reached with 'brpc session'
over HTTP in place of 'bsim serve', and the scenario gives no emulated apps; the world
keeps the host: availability, the work of each task (its estimate), the figures. Each
stage takes up what the sessions did: tasks that came in are jobs, tasks reported are
counted (late ones wasted) and leave the document, tasks gone were lost, RPCs are the
rise of each project's rpc_seqno. A task that finishes gets an output digest for the
project's validator: its workunit's (replicas agree), or with --nondeterministic
APP=P, with probability P, one of its own.

`+loopNote, []string{
			"bsim init scenarios/share-75-25 --world w.json --duration 6h > state.json",
			"bash scripts/client-loop.sh scenarios/share-75-25 --duration 6h",
			"bash scripts/client-loop.sh scenarios/deadlines-4cpu --duration 6h --policy goals",
		}, ""),
		Flags: []cli.Flag{
			worldFlag(),
			cliutil.PolicyFlag(),
			&cli.StringFlag{Name: flagDuration, Value: "1d", Usage: "simulated time, `D`: seconds or with a unit (90m, 36h, 10d, 2w)"},
			&cli.StringFlag{Name: flagDelta, Value: "60", Usage: "step length, `S` seconds (or with a unit)"},
			cliutil.SeedFlag(),
			existingFlag(),
			threeStateFlag(),
			emulateFlag(),
			forceFlag(),
			&cli.BoolFlag{Name: flagLive, Usage: "the projects are real servers the client reaches with brpc session (scripts/full-loop.sh): see above"},
			&cli.StringSliceFlag{Name: flagNondet, Usage: "with --live: results of app `APP[=P]` disagree with probability P (default 0.5): their output digests differ (repeat the flag)"},
			cliutil.FormatFlag("json", "yaml"),
			cliutil.MaxInputFlag(),
			cliutil.VerboseFlag(),
		},
		Action: runInit,
	}
}

func runInit(_ context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() != 1 {
		return cliutil.Usagef("want one SCENARIO, got %d arguments (see 'bsim init --help')", cmd.Args().Len())
	}
	policy, err := cliutil.Policy(cmd)
	if err != nil {
		return err
	}
	cfg, err := runConfig(cmd, runDefaults{})
	if err != nil {
		return err
	}
	if cfg.EmulateBOINC {
		// The loop's stages take bsim's own step order, and the world does not carry
		// what BOINC's order needs, so a loop begun this way would part from 'bsim run
		// --emulate boinc' at its first step.
		return cliutil.Usagef("--emulate boinc: BOINC's emulator's conventions are 'bsim run' and 'bsim compare' only; the shell loop's stages take bsim's own step order (see 'bsim run --help')")
	}
	cfg.Policy = policy
	path := cmd.Args().First()
	sc, _, err := loadScenario(cmd, path)
	if err != nil {
		return err
	}
	s, err := sim.New(sc, cfg)
	if err != nil {
		return cliutil.BadInput(fmt.Errorf("%s: %w", path, err))
	}
	if err := setLive(cmd, s, path); err != nil {
		return err
	}
	if err := writeWorld(cmd, s, path); err != nil {
		return err
	}
	return writeDocument(cmd, s.Doc(), state.JSON)
}
