package blocality

import "github.com/urfave/cli/v3"

func simulateCommand() *cli.Command {
	return &cli.Command{Name: "simulate", Usage: "emulate hosts on one batch: this policy against in-order dispatch", Hidden: true}
}
