// Package bsimplot is the program bsim-plot: it draws bsim's pictures (lib/simplot) from
// a request bsim writes on its standard input (lib/plotcmd), so that bsim itself need
// not link the plotting library and start slowly for it.
package bsimplot

import (
	"context"
	"fmt"
	"io"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/limits"
	"github.com/bkit/bkit/lib/plotcmd"
	"github.com/bkit/bkit/lib/simplot"
	"github.com/urfave/cli/v3"
)

// Main runs bsim-plot with args (args[0] is the program name) and returns its exit
// status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cliutil.Run(command(), args, stdin, stdout, stderr)
}

func command() *cli.Command {
	return &cli.Command{
		Name:      plotcmd.Program,
		Usage:     "draw bsim's pictures of a run or a comparison",
		UsageText: plotcmd.Program + " < REQUEST",
		Description: cliutil.Help(`
bsim-plot draws what bsim run --plot DIR and bsim compare --plot DIR show (and the
full loop's --plot): bsim runs it with a JSON request on standard input (a run's trace
and title, a comparison's figures, or counts over time, and the directory), and it writes SVG and PNG pictures and an index.html
there. It is a program of its own so that bsim does not link the plotting library,
whose start-up would cost every run; install it beside bsim (go install ./cmd/...).`,
			[]string{
				"bsim run scenarios/seed002-gpu.yaml --plot pictures   # runs bsim-plot",
				"bsim-plot < request.json",
			}, ""),
		Flags:  []cli.Flag{cliutil.MaxInputFlag()},
		Action: draw,
	}
}

func draw(_ context.Context, cmd *cli.Command) error {
	if err := cliutil.NoArgs(cmd); err != nil {
		return err
	}
	in, err := cliutil.LimitReader(cmd, cmd.Root().Reader, "standard input")
	if err != nil {
		return err
	}
	req, err := plotcmd.Decode(in)
	if limits.IsTooLarge(err) {
		return err // it names standard input and the limit
	}
	if err != nil {
		return cliutil.BadInput(fmt.Errorf("standard input: %w", err))
	}
	if req.Comparison != nil {
		_, err = simplot.WriteComparison(req.Dir, req.Comparison)
		return err
	}
	if req.Counts != nil {
		_, err = simplot.WriteCounts(req.Dir, req.Counts)
		return err
	}
	if err := simplot.Check(req.Trace); err != nil {
		return cliutil.BadInput(fmt.Errorf("standard input: trace: %w", err))
	}
	_, err = simplot.Write(req.Dir, req.Trace, req.Title)
	return err
}
