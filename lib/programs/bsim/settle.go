package bsim

import (
	"context"
	"fmt"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/urfave/cli/v3"
)

func settleCommand() *cli.Command {
	return &cli.Command{
		Name:      "settle",
		Usage:     "mark the tasks whose work finished in the last step done (prints how many)",
		UsageText: "bsim settle --world FILE --now T --state FILE --in-place",
		Description: cliutil.Help(`
A task whose work is done stays running until the step's first scheduling pass has
counted its last CPU time (seed 001's pass counts running tasks only); then it is done.
Prints how many tasks became done: if any did, a scheduling pass is due again.

`+loopNote, []string{"bsim settle --world w.json --now 1700000000 --state state.json --in-place"}, ""),
		Flags:  stageFlags(),
		Action: runSettle,
	}
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
