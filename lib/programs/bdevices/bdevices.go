// Package bdevices is the program bdevices: seed 002's processing resources over a client
// state document: describing this machine (detect), keeping the per-resource long-term
// debts (debt), choosing whom to ask for which work (request) and taking in the answer
// (reply). lib/prsc does the deciding; this is its shell.
package bdevices

import (
	"io"
	"math/rand/v2"
	"strconv"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/state"
	"github.com/urfave/cli/v3"
)

// Main runs bdevices with args (args[0] is the program name) and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cliutil.Run(command(), args, stdin, stdout, stderr)
}

func command() *cli.Command {
	return &cli.Command{
		Name:      "bdevices",
		Usage:     "processing resources (CPU, GPUs): per-resource debt, backoff and work requests (seed 002, client side)",
		UsageText: "bdevices detect | debt | request | reply [flags]",
		Description: cliutil.Help(`
Seed 002 ("work fetch and GPUs") on the client: the CPU and every coprocessor type
(NVIDIA, ATI, intel_gpu, any name) are processing resources with their own instances
and FLOPS; each project has, per resource, a long-term debt, a flag D(P,R) saying
whether it accumulates debt there, and a work-fetch backoff.

A client loop runs, with the same --now:
  bdevices debt     bring the long-term debts up to date over the time since the last run
  bdevices request  simulate the work buffer, choose the project and the per-resource request
  (ask the project: brpc session)
  bdevices reply    apply what came back to the backoffs and D flags
and starts from 'bdevices detect', which describes this machine. Each subcommand has
its own --help.

`+cliutil.SchemaNote,
			[]string{
				"bdevices detect > host.yaml",
				"bdevices request --now 1700000000 -o table < examples/gpu-seed-example.yaml",
				"bdevices reply --now 1700000000 --project A --jobs NVIDIA=3 --state client.yaml --in-place",
			}, ""),
		Commands: []*cli.Command{detectCommand(), debtCommand(), requestCommand(), replyCommand()},
	}
}

const flagDT = "dt"

// entry is the project's state for type t, or a zero one (without adding it).
func entry(p *state.Project, t string) state.ProjectResource {
	for _, pr := range p.Resources {
		if pr.Type == t {
			return pr
		}
	}
	return state.ProjectResource{Type: t}
}

const flagAsked = "asked"

// --- shared helpers ---

func fmtNum(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

func rng(cmd *cli.Command) *rand.Rand { return prsc.NewRand(cmd.Uint64(cliutil.FlagSeed)) }
