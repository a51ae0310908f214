package bretry

import (
	"context"
	"strconv"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/urfave/cli/v3"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "list the workunits bretry gave up on, and why",
		UsageText: "bretry report --db DSN [--app NAME] [--since TIME] [--limit N] [-o table|json]",
		Description: cliutil.Help(`
Lists the wu_giveup rows, oldest first: when, the app, the workunit, the reason
(not_sent: a result was never sent; errors: at least NError error results;
max_error_results: more error results than the workunit's max_error_results;
ndet_done: at least Ndet results done without a canonical result;
max_success_results: more than the workunit's max_success_results done without one;
max_total_results: more results needed than the workunit's max_total_results allows)
and the message
that was logged. --app keeps one app's, --since those at or after TIME (Unix seconds
or RFC 3339), --limit the first N. 'bserver status' counts them.`,
			[]string{"bretry report --db project.db", "bretry report --db project.db --app uppercase -o json | jq -r '.[].workunit'"}, ""),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "since", Usage: "only give-ups at or after `TIME` (Unix seconds or RFC 3339)"},
			&cli.IntFlag{Name: "limit", Usage: "at most `N` rows (0: all)"},
			cliutil.FormatFlag("table", "json"),
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := cliutil.NoArgs(cmd); err != nil {
				return err
			}
			var since float64
			if s := cmd.String("since"); s != "" {
				v, err := cliutil.ParseTime(s)
				if err != nil {
					return cliutil.Usagef("--since: %v", err)
				}
				since = v
			}
			if cmd.Int("limit") < 0 {
				return cliutil.Usagef("--limit: must be >= 0, got %d", cmd.Int("limit"))
			}
			s, err := openStore(ctx, cmd)
			if err != nil {
				return err
			}
			defer s.Close()
			gs, err := s.GiveUps(ctx, cmd.String("app"), since, cmd.Int("limit"))
			if err != nil {
				return userError(err)
			}
			w := cmd.Root().Writer
			if cmd.String(cliutil.FlagOutput) == "json" {
				return cliutil.WriteJSON(w, gs)
			}
			t := cliutil.NewTable(w, "time", "app", "workunit", "reason", "message")
			for _, g := range gs {
				t.Append(strconv.FormatFloat(g.Time, 'f', -1, 64), g.App, g.Workunit, g.Reason, g.Message)
			}
			return t.Render()
		},
	}
}
