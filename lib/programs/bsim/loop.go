package bsim

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/sim"
	"github.com/bkit/bkit/lib/state"
	"github.com/urfave/cli/v3"
)

// The subcommands of a run carried from program to program (scripts/client-loop.sh):
// each reads the run's world file and state document, does one stage of a step and
// writes both back; the client's own stages are bfetch, bdevices and bsched.

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
	stateFlags := func(extra ...cli.Flag) []cli.Flag {
		return append(append([]cli.Flag{worldFlag(), cliutil.NowFlag()}, extra...), append(cliutil.StateFlags(), cliutil.VerboseFlag())...)
	}
	return []*cli.Command{
		{
			Name:      "init",
			Usage:     "start a run carried from program to program: write its state document and world file",
			UsageText: "bsim init SCENARIO --world FILE [--duration D] [--delta S] [--seed N] [--policy seed|goals] [-o json|yaml] > state.json",
			Description: cliutil.Help(`
Loads SCENARIO as 'bsim run' does and writes the run's starting state document on
standard output and its world file to --world. --policy is the client policy the
stage programs run (give them the same --policy): seed or goals; the world records it,
and bsim advance accounts for each step as that policy does. rr runs only in 'bsim
run', since it keeps its round-robin turns in memory. See 'bsim run --help' for the
scenario and the step.

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
				&cli.BoolFlag{Name: flagLive, Usage: "the projects are real servers the client reaches with brpc session (scripts/full-loop.sh): see above"},
				&cli.StringSliceFlag{Name: flagNondet, Usage: "with --live: results of app `APP[=P]` disagree with probability P (default 0.5): their output digests differ (repeat the flag)"},
				cliutil.FormatFlag("json", "yaml"),
				cliutil.MaxInputFlag(),
				cliutil.VerboseFlag(),
			},
			Action: runInit,
		},
		{
			Name:      "clock",
			Usage:     "print the current step: TIME ON ACTIVE GPU_ACTIVE CONNECTED (nothing when the run is over)",
			UsageText: "bsim clock --world FILE",
			Description: cliutil.Help(`
Prints the current step's start (Unix seconds, exactly as --now takes it) and its
availability as 1 or 0: the host on, active (allowed to compute), GPUs active,
connected. Prints nothing once the run is over.

`+loopNote, []string{`read -r now on active gpu connected <<<"$(bsim clock --world w.json)"`}, ""),
			Flags:  []cli.Flag{worldFlag(), cliutil.MaxInputFlag()},
			Action: runClock,
		},
		{
			Name:      "serve",
			Usage:     "the emulated project server answers the request in the document (prints ok JOBS SEED, or failed)",
			UsageText: "bsim serve --world FILE --now T --state FILE --in-place",
			Description: cliutil.Help(`
The project of the document's request (brpc poll) answers it, which ends the RPC
session brpc poll recorded. A server that is down
fails the RPC: seed 000's backoff is applied and 'failed' printed. Otherwise the
project's done tasks are reported, jobs are made to fill the request and added to the
document, and 'ok JOBS SEED' is printed: JOBS the jobs per resource type as bdevices
reply --jobs takes them, SEED the seed for bdevices reply --seed.

`+loopNote, []string{`read -r status jobs seed <<<"$(bsim serve --world w.json --now "$now" --state state.json --in-place)"`}, ""),
			Flags:  stateFlags(),
			Action: runServe,
		},
		{
			Name:      "settle",
			Usage:     "mark the tasks whose work finished in the last step done (prints how many)",
			UsageText: "bsim settle --world FILE --now T --state FILE --in-place",
			Description: cliutil.Help(`
A task whose work is done stays running until the step's first scheduling pass has
counted its last CPU time (seed 001's pass counts running tasks only); then it is done.
Prints how many tasks became done: if any did, a scheduling pass is due again.

`+loopNote, []string{"bsim settle --world w.json --now 1700000000 --state state.json --in-place"}, ""),
			Flags:  stateFlags(),
			Action: runSettle,
		},
		{
			Name:      "advance",
			Usage:     "let the running tasks compute for the step and move the clock on",
			UsageText: "bsim advance --world FILE --now T --state FILE --in-place",
			Description: cliutil.Help(`
The running tasks compute for the step (while the host is active; GPU tasks while the
GPUs are); the figures' tallies, the projects' exponential average of CPU time (seed
000) and long-term debts (seed 002, from what each project's tasks really used) are
brought up to date; the clock moves to the next step, whose availability is sampled.

`+loopNote, []string{"bsim advance --world w.json --now 1700000000 --state state.json --in-place"}, ""),
			Flags:  stateFlags(),
			Action: runAdvance,
		},
		{
			Name:      "figures",
			Usage:     "print the figures of merit of a run carried from program to program",
			UsageText: "bsim figures --world FILE --state FILE [-o table|json]",
			Description: cliutil.Help(`
Prints what 'bsim run' prints, for the run so far.

`+loopNote, []string{"bsim figures --world w.json --state state.json -o json"}, ""),
			Flags:  []cli.Flag{worldFlag(), &cli.StringFlag{Name: cliutil.FlagState, Usage: "the run's state document, `FILE`", Required: true}, cliutil.FormatFlag("table", "json"), cliutil.MaxInputFlag()},
			Action: runFigures,
		},
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
	return writeDocument(cmd, s.Doc, state.JSON)
}

func runClock(_ context.Context, cmd *cli.Command) error {
	if err := cliutil.NoArgs(cmd); err != nil {
		return err
	}
	w, err := readWorld(cmd)
	if err != nil {
		return err
	}
	if w.Now >= w.End {
		return nil
	}
	b := func(x bool) int {
		if x {
			return 1
		}
		return 0
	}
	a := w.Avail
	_, err = fmt.Fprintf(cmd.Root().Writer, "%s %d %d %d %d\n", exact(w.Now), b(a.On), b(a.Active), b(a.GPUActive), b(a.Connected))
	return err
}

func runServe(_ context.Context, cmd *cli.Command) error {
	st, err := restore(cmd)
	if err != nil {
		return err
	}
	in, s := st.in, st.s
	if s.IsLive() {
		return cliutil.Usagef("%s: a live run's servers are real: brpc session talks to them, not bsim serve", cmd.String(flagWorld))
	}
	doc, now := in.Doc, s.Now()
	req := doc.Request
	if req == nil || req.Time != now || req.Project == "" {
		return cliutil.Usagef("%s: no scheduler request at --now %s: run 'brpc poll' first", in.File, exact(now))
	}
	p := slices.IndexFunc(doc.Projects, func(pr state.Project) bool { return pr.Name == req.Project })
	if p < 0 {
		return cliutil.Usagef("%s: request.project %q is not a project of the document", in.File, req.Project)
	}
	rep := s.Serve(sim.RPC{Project: p, Request: *req}, now)
	rpc.EndSession(doc)
	if err := st.save(cmd); err != nil {
		return err
	}
	if rep.Failed {
		_, err = fmt.Fprintln(cmd.Root().Writer, "failed")
		return err
	}
	var jobs []string
	for _, r := range doc.Host.Resources {
		jobs = append(jobs, r.Type+"="+strconv.Itoa(rep.Jobs[r.Type]))
	}
	_, err = fmt.Fprintf(cmd.Root().Writer, "ok %s %d\n", strings.Join(jobs, ","), rep.Seed)
	return err
}

func runSettle(_ context.Context, cmd *cli.Command) error {
	st, err := restore(cmd)
	if err != nil {
		return err
	}
	n := st.s.Settle()
	if err := st.save(cmd); err != nil {
		return err
	}
	_, err = fmt.Fprintln(cmd.Root().Writer, n)
	return err
}

func runAdvance(_ context.Context, cmd *cli.Command) error {
	st, err := restore(cmd)
	if err != nil {
		return err
	}
	st.s.Advance()
	return st.save(cmd)
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
	cfg := sim.Config{Duration: w.Duration, Delta: w.Delta, Policy: w.Policy, Seed: w.Seed}
	return printResult(cmd, w.Scenario, cfg, s.Result())
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
