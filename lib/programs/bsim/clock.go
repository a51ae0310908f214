package bsim

import (
	"context"
	"fmt"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/urfave/cli/v3"
)

func clockCommand() *cli.Command {
	return &cli.Command{
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
	}
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
