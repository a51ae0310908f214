package bsim

import (
	"context"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/urfave/cli/v3"
)

func advanceCommand() *cli.Command {
	return &cli.Command{
		Name:      "advance",
		Usage:     "let the running tasks compute for the step and move the clock on",
		UsageText: "bsim advance --world FILE --now T --state FILE --in-place",
		Description: cliutil.Help(`
The running tasks compute for the step (while the host is active; GPU tasks while the
GPUs are); the figures' tallies, the projects' exponential average of CPU time (seed
000) and long-term debts (seed 002, from what each project's tasks really used) are
brought up to date; the clock moves to the next step, whose availability is sampled.

`+loopNote, []string{"bsim advance --world w.json --now 1700000000 --state state.json --in-place"}, ""),
		Flags:  stageFlags(),
		Action: runAdvance,
	}
}

func runAdvance(_ context.Context, cmd *cli.Command) error {
	st, err := restore(cmd)
	if err != nil {
		return err
	}
	st.s.Advance()
	return st.save(cmd)
}
