// Package bsim is the program bsim: the whole BOINC client loop over simulated time on a
// scenario, scored with the figures of merit of BOINC's own client emulator (lib/sim
// runs the loop; this is its shell).
package bsim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/plotcmd"
	"github.com/bkit/bkit/lib/scenario"
	"github.com/bkit/bkit/lib/sim"
	"github.com/urfave/cli/v3"
)

// Main runs bsim with args (args[0] is the program name) and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cliutil.Run(command(), args, stdin, stdout, stderr)
}

func command() *cli.Command {
	commands := append([]*cli.Command{runCommand(), compareCommand(), genCommand(), importCommand(), exportCommand()}, loopCommands()...)
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.Name
	}
	return &cli.Command{
		Name:      "bsim",
		Usage:     "emulate a BOINC client over simulated time and score its scheduling policies",
		UsageText: "bsim " + strings.Join(names, " | ") + " [flags]",
		Description: cliutil.Help(`
bsim runs the whole client loop — availability, scheduler RPCs to emulated project
servers, work fetch, CPU scheduling, task progress, reporting, deadlines — in one
process over simulated time, and prints the figures of merit of BOINC's own client
emulator, computed the same way, so that both can be compared on one scenario.
See 'bsim run --help'.`,
			[]string{
				"bsim run scenarios/share-75-25 --duration 10d",
				"bsim run scenarios/seed002-gpu --policy rr -o json",
				"bsim compare scenarios/* --duration 10d",
			}, ""),
		Commands: commands,
		// --asked takes a project name, which may hold a comma.
		DisableSliceFlagSeparator: true,
	}
}

const (
	flagDuration = "duration"
	flagDelta    = "delta"
	flagPolicy   = "policy"
	flagPlot     = "plot"
	flagExisting = "existing-jobs-only"
	flagThree    = "three-state"
)

// threeStateFlag makes the emulated servers send seed 002's proposed three-state reply.
func threeStateFlag() cli.Flag {
	return &cli.BoolFlag{Name: flagThree, Usage: "the project servers answer with seed 002's proposed three-state reply: a reply without jobs means " +
		"\"no work, but supported\" and keeps D(P,R), so a project is asked again for a resource once its backoff ends (the shell loop: bdevices reply --three-state)"}
}

const flagEmulate = "emulate"

// emulateFlag is --emulate: whose emulator's conventions a run follows.
func emulateFlag() cli.Flag {
	return &cli.StringFlag{Name: flagEmulate, Value: "bsim", Usage: "the emulator's conventions, `bsim|boinc`: bsim's (nothing computes while the host is off; " +
		"the figures count the time it could compute) or BOINC's emulator's (client/sim.cpp: running tasks compute while the host is off or inactive, " +
		"totals over the whole simulated time, a task finishing within a step charged the whole step, its order within a step (finished tasks, a pass, the RPCs) " +
		"and the GPUs' suspension seen a step late; policy boinc there backs off as BOINC's client and reads no master file; " +
		"its random numbers are BOINC's emulator's: seed N is glibc's srand(N), drawn where and in the order client/sim.cpp draws; docs/decisions.md)",
		Validator: func(s string) error {
			if s != "bsim" && s != "boinc" {
				return fmt.Errorf("want bsim or boinc, got %q", s)
			}
			return nil
		}}
}

const flagForce = "force"

// forceFlag runs a scenario that is estimated to take longer than sim.MaxEstimatedRun.
func forceFlag() cli.Flag {
	return &cli.BoolFlag{Name: flagForce, Usage: fmt.Sprintf("run even when the run is estimated to take more than %g minutes of CPU time "+
		"(the estimate: steps × the jobs the client would hold to fill its work buffer; short jobs and long runs cost most)", sim.MaxEstimatedRun/60)}
}

// existingFlag is BOINC's emulator's --existing_jobs_only (both spellings work).
func existingFlag() cli.Flag {
	return &cli.BoolFlag{Name: flagExisting, Aliases: []string{"existing_jobs_only"},
		Usage: "the project servers send no jobs: only the scenario's explicit <workunit>/<result> jobs run (BOINC's emulator's --existing_jobs_only)"}
}

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run a scenario and print its figures of merit",
		UsageText: "bsim run SCENARIO [--duration D] [--delta S] [--policy " + strings.Join(sim.Policies(), "|") + "] [--seed N] [-o table|json] [--plot DIR]",
		Description: cliutil.Help(`
SCENARIO is either
  - a BOINC client emulator directory: client_state.xml (the host, projects, apps with
    their job parameters, app versions), optional global_prefs.xml and cc_config.xml,
    as BOINC's emulator reads them (docs/scenario-file.md; scenarios/example-2cpu-2to1
    is BOINC's public example, with BOINC's figures for it in boinc_figures.txt; the
    emulator's own description is boinc-emulator.md in the design folder, ../shared,
    that sits beside a bkit clone, not in it). A GPU's speed is read as BOINC's
    emulator reads it: 0.2 × peak_flops × count per instance; or
  - a bkit scenario file, YAML or JSON: a state document plus the availability
    processes, the project servers' and the apps' job parameters, and defaults for
    --duration and --delta (docs/scenario-file.md; 'bsim export DIR' converts a
    directory).

Every step of --delta seconds: the host's availability (on, active, GPU active,
connected) and each project server's (up or down) are sampled; the policy's scheduler
RPCs go to the emulated servers, which make up jobs to fill each request (a down server
fails the RPC and seed 000's backoff applies; a project with no scheduler URL yet, or
after ten failures in a row, has its master file read first); the policy's scheduler
decides what runs; running tasks advance by their app version's real speed; finished
tasks are reported when the policy contacts their project. A long run shows a progress
bar on standard error when it is a terminal. A run is estimated before it starts (steps
× the jobs its client would hold to fill its work buffer: short jobs and long runs cost
most; -v prints the estimate); one estimated past five minutes of CPU time is refused
unless --force. --plot DIR also draws the run: which task
ran on which processor over time, and each project's share of each resource over time
against its target (SVG and PNG, with DIR/index.html to look at them).

Policies:
  seed  seeds 000, 001 and 002 together, through the functions bsched, bfetch, bdevices
        and brpc call: seed 001's CPU scheduling and CPU work fetch, seed 002's per-
        resource debts, backoffs and coprocessor work fetch, seed 000's reporting,
        RPC backoff and exponential average of CPU time (default)
  rr    plain round-robin among the projects with work: the baseline
  goals seed 001's goals where the seeds' algorithms fall short (lib/goals): debts that
        keep accruing while a project's server is down, a deadline mode for the tasks
        the round-robin simulation sees late, per-project buffers in wall-clock time
        (on and active fractions counted) within 0.3-0.5 of the jobs' latency, results
        reported as soon as they are overdue, and late tasks abandoned
  boinc today's BOINC client (lib/boincpolicy, from BOINC's client source): priority from
        recent estimated credit (REC, half-life 10 days) and resource share, the
        round-robin simulation's deadline misses run earliest deadline first, work
        fetch by priority for a resource whose buffer is below work_buf_min, per-
        resource backoff; compare it under BOINC's emulator's conventions (--emulate boinc)

Figures (BOINC's emulator's definitions): wasted fraction (peak FLOPs of results
reported after their deadline, or given up unfinished, ÷ the peak FLOPs available),
idle fraction, share violation (Σ|used − share × total used| ÷ total used), monotony
(X/(X+1), X the mean RMS time since a project last ran ÷ (scheduling period ×
projects)), RPCs per job (RPCs the servers answered ÷ 2 × jobs received: an RPC to a
down server is not counted, as in BOINC's emulator); and Jain's fairness index over
share-normalised use.
-o table ends with the emulator's one-line form 'wf W if I sv S m M r R'. The same
scenario, policy and --seed give byte-identical output.`,
			[]string{
				"bsim run scenarios/example-2cpu-2to1 --duration 10d   # BOINC's public example",
				"bsim run scenarios/seed002-gpu --duration 30d --policy rr",
				"bsim run scenarios/share-75-25 --duration 10d --seed 7 -o json",
				"bsim run scenarios/seed002-gpu.yaml --plot seed002-pictures   # 30 days: the file's default",
			}, ""),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: flagDuration, Value: "1d", Usage: "simulated time, `D`: seconds or with a unit (90m, 36h, 10d, 2w)"},
			&cli.StringFlag{Name: flagDelta, Value: "60", Usage: "step length, `S` seconds (or with a unit)"},
			&cli.StringFlag{Name: flagPolicy, Value: "seed", Usage: "the client policy: " + strings.Join(sim.Policies(), ", ")},
			cliutil.SeedFlag(),
			cliutil.FormatFlag("table", "json"),
			&cli.StringFlag{Name: flagPlot, Usage: "also draw the run: a timeline and each project's share over time, SVG and PNG, with an index.html, in `DIR`"},
			existingFlag(),
			threeStateFlag(),
			emulateFlag(),
			forceFlag(),
			cliutil.MaxInputFlag(),
			cliutil.VerboseFlag(),
		},
		Action: run,
	}
}

func run(_ context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() != 1 {
		return cliutil.Usagef("want one SCENARIO, got %d arguments (see 'bsim run --help')", cmd.Args().Len())
	}
	if _, err := sim.NewPolicy(cmd.String(flagPolicy)); err != nil {
		return cliutil.Usagef("--policy: %v", err)
	}
	if _, err := runConfig(cmd, runDefaults{}); err != nil {
		return err // bad flags are told before the scenario is read
	}
	path := cmd.Args().First()
	sc, defaults, err := loadScenario(cmd, path)
	if err != nil {
		return err
	}
	cfg, err := runConfig(cmd, defaults)
	if err != nil {
		return err
	}
	cfg.Policy = cmd.String(flagPolicy)
	plotDir := cmd.String(flagPlot)
	cfg.Trace = plotDir != ""
	var plotter string
	if plotDir != "" {
		// Before the run, so that a bad directory or a missing bsim-plot does not cost it.
		if plotter, err = plotcmd.Find(); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
		if err := os.MkdirAll(plotDir, 0o755); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
	}
	log := cliutil.Logger(cmd)
	log.Debug("run", "scenario", path, "duration", cfg.Duration, "delta", cfg.Delta, "policy", cfg.Policy, "seed", cfg.Seed)
	s, err := sim.New(sc, cfg)
	if err != nil {
		return cliutil.BadInput(fmt.Errorf("%s: %w", path, err))
	}
	log.Debug("estimated CPU time", "seconds", s.EstimatedRunTime())
	bar := cliutil.NewProgress(cmd.Root().ErrWriter, "bsim")
	total := days(cfg.Duration)
	yielded := time.Now()
	// Every 64 steps: a step costs a microsecond or more, so the clock's reading is
	// lost in them, and a run of short jobs whose steps take tens of milliseconds still
	// moves its bar (every 1024 steps, the 568-s run showed nothing for 40 s).
	for i := 0; s.Step(); i++ {
		if i%64 != 0 {
			continue
		}
		// The runtime interrupts a goroutine that has run 10 ms without yielding, by a
		// signal whose handler reads the interrupted function's tables from the
		// binary: pages that make a long run's resident memory grow with its length
		// (128 KB over 1,000 days). Yielding every few milliseconds leaves it nothing
		// to interrupt; a yield costs a few microseconds (two system calls), too much
		// for every 1024 steps.
		if t := time.Now(); t.Sub(yielded) > 4*time.Millisecond {
			runtime.Gosched()
			yielded = t
		}
		if bar.Due() {
			bar.Update(s.Progress(), days(s.Progress()*cfg.Duration)+" of "+total+" simulated")
		}
	}
	bar.Done()
	if err := printResult(cmd, path, cfg, s.Result()); err != nil {
		return err
	}
	if plotDir == "" {
		return nil
	}
	title := fmt.Sprintf("%s, policy %s, seed %d, %s", filepath.Base(filepath.Clean(path)), cfg.Policy, cfg.Seed, total)
	if err := plotcmd.Draw(plotter, &plotcmd.Request{Dir: plotDir, Title: title, Trace: s.Trace()}, cmd.Root().ErrWriter); err != nil {
		return err
	}
	_, err = fmt.Fprintf(cmd.Root().ErrWriter, "bsim: pictures of the run in %s\n", filepath.Join(plotDir, "index.html"))
	return err
}

// runDefaults are a scenario's own defaults for --duration and --delta (seconds; 0:
// none).
type runDefaults struct{ Duration, Delta float64 }

// loadScenario reads SCENARIO: a BOINC emulator directory or a bkit scenario file.
func loadScenario(cmd *cli.Command, path string) (*scenario.Scenario, runDefaults, error) {
	limit, err := cliutil.MaxInput(cmd)
	if err != nil {
		return nil, runDefaults{}, err
	}
	sc, err := readScenario(path, limit)
	if err != nil {
		return nil, runDefaults{}, err // readScenario's errors carry their exit status
	}
	for _, n := range sc.Notes {
		fmt.Fprintf(cmd.Root().ErrWriter, "bsim: %s: %s (as BOINC's emulator does)\n", path, n)
	}
	if len(sc.Doc.Projects) == 0 {
		// A run would print figures of nothing ("projects": null).
		return nil, runDefaults{}, cliutil.BadInput(fmt.Errorf("%s: the scenario has no projects: nothing to emulate", path))
	}
	var d runDefaults
	d.Duration, d.Delta = sc.RunDefaults()
	return sc, d, nil
}

// runConfig reads --duration, --delta and --seed; a flag not given takes the
// scenario's default, then the flag's own.
func runConfig(cmd *cli.Command, d runDefaults) (sim.Config, error) {
	dur, err := cliutil.ParsePositiveDuration(cmd.String(flagDuration))
	if err != nil {
		return sim.Config{}, cliutil.Usagef("--duration: %v", err)
	}
	if !cmd.IsSet(flagDuration) && d.Duration > 0 {
		dur = d.Duration
	}
	if dur <= 0 {
		return sim.Config{}, cliutil.Usagef("--duration: must be > 0, got %g", dur)
	}
	delta, err := cliutil.ParsePositiveDuration(cmd.String(flagDelta))
	if err != nil {
		return sim.Config{}, cliutil.Usagef("--delta: %v", err)
	}
	if !cmd.IsSet(flagDelta) && d.Delta > 0 {
		delta = d.Delta
	}
	if delta <= 0 {
		return sim.Config{}, cliutil.Usagef("--delta: must be > 0 seconds, got %g", delta)
	}
	return sim.Config{Duration: dur, Delta: delta, Seed: cmd.Uint64(cliutil.FlagSeed), ExistingJobsOnly: cmd.Bool(flagExisting), ThreeState: cmd.Bool(flagThree),
		EmulateBOINC: cmd.String(flagEmulate) == "boinc", Force: cmd.Bool(flagForce)}, nil
}

// printResult writes a run's figures as -o says (table by default).
func printResult(cmd *cli.Command, scenario string, cfg sim.Config, res *sim.Result) error {
	w := cmd.Root().Writer
	if cmd.String(cliutil.FlagOutput) == "json" {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	return table(w, scenario, cfg, res)
}

func table(w io.Writer, dir string, cfg sim.Config, res *sim.Result) error {
	three := ""
	if cfg.ThreeState {
		three = ", three-state replies"
	}
	if cfg.EmulateBOINC {
		three += ", BOINC's emulator's conventions"
	}
	fmt.Fprintf(w, "Scenario %s, policy %s%s, seed %d: %s simulated in steps of %s s\n\n",
		dir, cfg.Policy, three, cfg.Seed, days(cfg.Duration), cliutil.Num(cfg.Delta))
	t := cliutil.NewTable(w, "project", "resource share", "share", "used", "deadlines met", "missed")
	for _, p := range res.Projects {
		if err := t.Append([]string{p.Name, cliutil.Num(p.ResourceShare), pct(p.Share), pct(p.UsedFraction),
			fmt.Sprint(p.DeadlinesMet), fmt.Sprint(p.DeadlinesMissed)}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t = cliutil.NextTable(t, "resource", "project", "fraction of its use")
	for _, r := range res.Resources {
		for _, p := range r.Projects {
			if err := t.Append([]string{r.Type, p.Name, pct(p.UsedFraction)}); err != nil {
				return err
			}
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	masters := ""
	switch {
	case res.FailedRPCs == 1:
		masters = ", 1 RPC to a down server not counted"
	case res.FailedRPCs > 1:
		masters = fmt.Sprintf(", %d RPCs to a down server not counted", res.FailedRPCs)
	}
	if res.MasterFetches > 0 {
		masters += fmt.Sprintf(", %d master file reads", res.MasterFetches)
	}
	fmt.Fprintf(w, "\nwasted fraction  %f\nidle fraction    %f\nshare violation  %f\nmonotony         %f\nRPCs per job     %f (%d RPCs, %d jobs%s)\nJain's index     %f\n\n%s\n",
		res.WastedFraction, res.IdleFraction, res.ShareViolation, res.Monotony, res.RPCsPerJob, res.RPCs, res.Jobs, masters, res.JainIndex, res.OneLine())
	return nil
}

func pct(x float64) string { return fmt.Sprintf("%.2f%%", 100*x) }

func days(s float64) string {
	switch {
	case s == 86400:
		return "1 day"
	case s >= 86400:
		return cliutil.Num(s/86400) + " days"
	}
	return cliutil.Num(s) + " s"
}
