package bsim

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/sim"
	"github.com/urfave/cli/v3"
)

// The subcommands of a run carried from program to program (scripts/client-loop.sh):
// each reads the run's world file and state document, does one stage of a step and
// writes both back; the client's own stages are bfetch, bdevices and bsched. One file
// per subcommand (init.go, clock.go, serve.go, settle.go, advance.go, figures.go);
// what they share is here.

const (
	flagWorld  = "world"
	flagLive   = "live"
	flagNondet = "nondeterministic"
)

const loopNote = `A run carried from program to program is a state document plus a world file (the
emulated world around the client: clock, availability, project servers, the real work
of each task, the tallies of the figures). One step, as scripts/client-loop.sh makes it:

  bsim clock                       the step's time and availability
  if on and connected, until brpc poll names no project:
    bfetch --now T                 seed 001's work-fetch decision
    bdevices request --now T [--asked P]   seed 002's request for the coprocessors
    brpc poll --now T -o project [--asked P]   the next scheduler RPC (prints the project)
    bsim serve --now T             the emulated server's reply (prints ok JOBS SEED or failed)
    bdevices reply --now T --jobs JOBS --seed SEED   (after ok)
  if on:
    bsched --if-due --now T
    bsim settle --now T            tasks that finished are done (prints how many)
    bsched --if-due --now T        (if any were)
  bsim advance --now T             tasks compute; the clock moves on
and at the end 'bsim figures' prints what 'bsim run' prints for the same scenario,
seed and policy, to the last digit. For the goals policy, give bsim init and bfetch,
bdevices request, brpc poll and bsched --policy goals. Documents pass with --state FILE --in-place; standard output
carries each stage's answer.`

func worldFlag() cli.Flag {
	return &cli.StringFlag{Name: flagWorld, Usage: "the run's world file, `FILE` (written by bsim init, rewritten atomically)", Required: true}
}

func loopCommands() []*cli.Command {
	return []*cli.Command{initCommand(), clockCommand(), serveCommand(), settleCommand(), advanceCommand(), figuresCommand()}
}

// stageFlags are the flags of a stage subcommand: --world, --now and extra, then --state,
// --in-place, --max-input and -v.
func stageFlags(extra ...cli.Flag) []cli.Flag {
	return append(append([]cli.Flag{worldFlag(), cliutil.NowFlag()}, extra...), append(cliutil.StateFlags(), cliutil.VerboseFlag())...)
}

// stage is a run taken up by one of the stage subcommands: its document and the run.
type stage struct {
	in       *cliutil.Input
	s        *sim.Sim
	scenario string // the world's, kept when it is written back
}

// restore reads the world and the document (--state FILE --in-place) of a stage and
// takes the run up at --now, which must be the world's current step.
func restore(cmd *cli.Command) (*stage, error) {
	if err := cliutil.NoArgs(cmd); err != nil {
		return nil, err
	}
	now, err := requiredNow(cmd)
	if err != nil {
		return nil, err
	}
	w, err := readWorld(cmd)
	if err != nil {
		return nil, err
	}
	if w.Now >= w.End {
		return nil, cliutil.Usagef("%s: the run is over (it ended at %s)", cmd.String(flagWorld), exact(w.End))
	}
	if now != w.Now {
		return nil, cliutil.Usagef("--now %s is not the run's current step %s (bsim clock --world %s tells it)", exact(now), exact(w.Now), cmd.String(flagWorld))
	}
	in, err := readInPlace(cmd)
	if err != nil {
		return nil, err
	}
	s, err := sim.Restore(in.Doc, w)
	if err != nil {
		return nil, cliutil.BadInput(fmt.Errorf("%s and %s: %w", cmd.String(flagWorld), in.File, err))
	}
	return &stage{in: in, s: s, scenario: w.Scenario}, nil
}

// save writes the stage's document, then its world.
func (st *stage) save(cmd *cli.Command) error {
	if err := cliutil.WriteState(cmd, st.in, nil); err != nil {
		return err
	}
	return writeWorld(cmd, st.s, st.scenario)
}

func readInPlace(cmd *cli.Command) (*cliutil.Input, error) {
	if !cmd.Bool(cliutil.FlagInPlace) || cmd.String(cliutil.FlagState) == "" {
		return nil, cliutil.Usagef("%s needs --state FILE --in-place: standard output carries its answer", cmd.FullName())
	}
	return cliutil.ReadState(cmd)
}

func requiredNow(cmd *cli.Command) (float64, error) {
	if cmd.String(cliutil.FlagNow) == "" {
		return 0, cliutil.Usagef("--now is required: the run's clock is the world's (bsim clock prints it)")
	}
	return cliutil.Now(cmd)
}

func readWorld(cmd *cli.Command) (*sim.World, error) {
	path := cmd.String(flagWorld)
	f, err := os.Open(path)
	if err != nil {
		return nil, cliutil.Usagef("%v", err)
	}
	defer f.Close()
	lr, err := cliutil.LimitReader(cmd, f, path)
	if err != nil {
		return nil, err
	}
	w, err := sim.DecodeWorld(lr, path)
	if lr.Err() != nil {
		return nil, cliutil.BadInput(lr.Err()) // DecodeWorld's message would hide it
	}
	if err != nil {
		return nil, cliutil.BadInput(err)
	}
	return w, nil
}

func writeWorld(cmd *cli.Command, s *sim.Sim, scenario string) error {
	w, err := s.World(scenario)
	if err != nil {
		return err
	}
	data, err := sim.EncodeWorld(w)
	if err != nil {
		return err
	}
	return cliutil.WriteFileAtomic(cmd.String(flagWorld), data)
}

// exact formats a time so that --now reads back the same float64.
func exact(t float64) string { return strconv.FormatFloat(t, 'f', -1, 64) }

// setLive makes s a live run when --live is given (bsim init).
func setLive(cmd *cli.Command, s *sim.Sim, path string) error {
	nd := cmd.StringSlice(flagNondet)
	if !cmd.Bool(flagLive) {
		if len(nd) > 0 {
			return cliutil.Usagef("--%s needs --%s", flagNondet, flagLive)
		}
		return nil
	}
	if cmd.Bool(flagThree) {
		return cliutil.Usagef("--%s is the emulated servers' reply; with --%s the servers are real: give brpc session --%s instead", flagThree, flagLive, flagThree)
	}
	var apps []sim.NondeterministicApp
	for _, a := range nd {
		name, p, ok := strings.Cut(a, "=")
		n := sim.NondeterministicApp{App: name, P: 0.5}
		if ok {
			f, err := strconv.ParseFloat(p, 64)
			if err != nil || !(f >= 0 && f <= 1) {
				return cliutil.Usagef("--%s %s: want APP=P with P from 0 to 1", flagNondet, a)
			}
			n.P = f
		}
		if name == "" {
			return cliutil.Usagef("--%s %s: want APP=P with P from 0 to 1", flagNondet, a)
		}
		apps = append(apps, n)
	}
	if err := s.SetLive(apps); err != nil {
		return cliutil.BadInput(fmt.Errorf("%s: %w", path, err))
	}
	return nil
}
