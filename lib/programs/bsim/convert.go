package bsim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/scenario"
	"github.com/bkit/bkit/lib/state"
	"github.com/urfave/cli/v3"
)

// The conversions: a real client's state into a state document (import), a BOINC
// emulator scenario directory into a bkit scenario file (export).

const flagPrefs = "prefs"

func importCommand() *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "turn a real BOINC client's client_state.xml into a state document for bsched, bfetch and bdevices",
		UsageText: "bsim import CLIENT_STATE.xml [--prefs global_prefs.xml] [-o yaml|json] > state.yaml",
		Description: cliutil.Help(`
Reads a BOINC client's client_state.xml (in the client's data directory, e.g.
/var/lib/boinc-client; - for standard input) and writes the state document bkit's
client programs read: the host's CPUs and GPUs with their FLOPS, time_stats, the
projects with their resource shares, RPC timing state and debts, apps, app versions,
and the results with their state, deadlines and work done. --prefs applies a
global_prefs.xml (work buffer, scheduling period, max_ncpus_pct); without it the
preferences are BOINC's defaults. Elements bkit has no use for are skipped, as
BOINC's own parser skips them; what is wrong names the file and the element.

`+cliutil.SchemaNote, []string{
			"bsim import /var/lib/boinc-client/client_state.xml --prefs /var/lib/boinc-client/global_prefs.xml > mine.yaml",
			"bsched -o table < mine.yaml    # what would seed 001 run on my client now?",
			"bsim import client_state.xml -o json | bfetch -o table",
		}, ""),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: flagPrefs, Usage: "apply the preferences of `global_prefs.xml`"},
			cliutil.FormatFlag("yaml", "json"),
			cliutil.MaxInputFlag(),
		},
		Action: runImport,
	}
}

func runImport(_ context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() != 1 {
		return cliutil.Usagef("want one CLIENT_STATE.xml (- for standard input), got %d arguments", cmd.Args().Len())
	}
	path := cmd.Args().First()
	var r io.Reader = cmd.Root().Reader
	name := "stdin"
	if path != "-" {
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			return cliutil.Usagef("%s is a directory: give the client_state.xml in it", path)
		}
		f, err := os.Open(path)
		if err != nil {
			return cliutil.Usagef("%v", err)
		}
		defer f.Close()
		r, name = f, path
	}
	lr, err := cliutil.LimitReader(cmd, r, name)
	if err != nil {
		return err
	}
	doc, err := boincxml.ImportClientState(lr, name)
	if err != nil {
		return cliutil.BadInput(err)
	}
	if p := cmd.String(flagPrefs); p != "" {
		f, err := os.Open(p)
		if err != nil {
			return cliutil.Usagef("--prefs: %v", err)
		}
		defer f.Close()
		lp, err := cliutil.LimitReader(cmd, f, p)
		if err != nil {
			return err
		}
		prefs, err := boincxml.ReadGlobalPrefs(lp, p)
		if err != nil {
			return cliutil.BadInput(err)
		}
		prefs.Apply(doc)
		if err := state.Validate(doc); err != nil {
			var se *state.Error
			if errors.As(err, &se) {
				se.File = name + " with " + p
				return cliutil.BadInput(se)
			}
			return cliutil.BadInput(fmt.Errorf("%s with %s: %w", name, p, err))
		}
	}
	return writeDocument(cmd, doc, state.YAML)
}

func exportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "turn a BOINC emulator scenario directory into a bkit scenario file (YAML or JSON)",
		UsageText: "bsim export SCENARIO [-o yaml|json] > scenario.yaml",
		Description: cliutil.Help(`
Writes the scenario SCENARIO (a BOINC client emulator directory, or a bkit scenario
file to re-encode) as a bkit scenario file: a state document plus the host's
availability processes, the project servers' and the apps' job parameters, which
'bsim run' reads as it reads the directory, to the same figures. The format is in
docs/scenario-file.md and `+scenario.SchemaPath+`.`, []string{
			"bsim export scenarios/example-2cpu-2to1 > example.yaml",
			"bsim run example.yaml --duration 10d",
		}, ""),
		Flags:  []cli.Flag{cliutil.FormatFlag("yaml", "json"), cliutil.MaxInputFlag()},
		Action: runExport,
	}
}

func runExport(_ context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() != 1 {
		return cliutil.Usagef("want one SCENARIO, got %d arguments", cmd.Args().Len())
	}
	limit, err := cliutil.MaxInput(cmd)
	if err != nil {
		return err
	}
	data, err := exportScenario(cmd.Args().First(), outputFormat(cmd, state.YAML), limit)
	if err != nil {
		return err // readScenario's errors carry their exit status
	}
	_, err = cmd.Root().Writer.Write(data)
	return err
}

// outputFormat is -o as a document format, def when it is not given.
func outputFormat(cmd *cli.Command, def state.Format) state.Format {
	if o := cmd.String(cliutil.FlagOutput); o != "" {
		return state.Format(o)
	}
	return def
}

// writeDocument writes doc on standard output in -o's format (def when not given).
func writeDocument(cmd *cli.Command, doc *state.Document, def state.Format) error {
	data, err := state.Encode(doc, outputFormat(cmd, def))
	if err != nil {
		return err
	}
	_, err = cmd.Root().Writer.Write(data)
	return err
}
