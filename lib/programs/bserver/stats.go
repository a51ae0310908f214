package bserver

import (
	"context"
	"fmt"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/server"
	"github.com/urfave/cli/v3"
)

func statsCommand() *cli.Command {
	return &cli.Command{
		Name:      "stats",
		Usage:     "the statistics export that statistics sites read",
		UsageText: "bserver stats export --db DSN DIR",
		Commands: []*cli.Command{{
			Name:      "export",
			Usage:     "write user.gz, host.gz, team.gz and tables.xml into DIR (BOINC's db_dump form)",
			UsageText: "bserver stats export --db DSN DIR",
			Description: cliutil.Help(`
Writes the project's statistics export into DIR, the files statistics sites download
(BOINC's db_dump, sched/db_dump.cpp):
  user.gz     <users><user> id, name, create_time, total_credit, expavg_credit,
              expavg_time, cpid (a hash of the account's secret and e-mail address)
  host.gz     <hosts><host> id, userid, credit, coprocs, create_time, rpc_time, ncpus,
              p_fpops, m_nbytes, host_cpid (a hash of the client's id and its owner's address)
  team.gz     <teams> (bkit has no teams: empty)
  tables.xml  update_time, nusers, nteams, nhosts, total_credit
Names are XML-escaped. Each file is written under a temporary name and renamed, so
a site downloading meanwhile gets the previous whole file; two exports at once are
safe, and the temporary files of one killed mid-way are removed by the next. Run it from cron (daily,
as BOINC projects do) into a directory the web server publishes; each run is
recorded as a cron run ('bserver status'). Prints: exported N users, N hosts, 0 teams.`,
				[]string{
					"bserver stats export --db project.db /var/www/project/stats",
					"0 3 * * * bserver stats export --db /var/lib/project/project.db /var/www/project/stats   # crontab",
				}, `0  the files are written
1  failure at run time (database, file system)
2  bad usage (no DIR); nothing is written`),
			Action: func(ctx context.Context, cmd *cli.Command) error {
				if cmd.Args().Len() != 1 {
					return cliutil.Usagef("want one directory: bserver stats export --db DSN DIR")
				}
				dir := cmd.Args().First()
				now, err := cliutil.Now(cmd)
				if err != nil {
					return err
				}
				s, err := openStore(ctx, cmd, true)
				if err != nil {
					return err
				}
				defer s.Close()
				var sum server.ExportSummary
				err = RecordRun(ctx, s, cmd.FullName(), "", now, cliutil.Logger(cmd), func(ctx context.Context) (int64, error) {
					var err error
					sum, err = server.ExportStats(ctx, s, dir, now)
					return sum.RowsHandled(), err
				})
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.Root().Writer, sum)
				return nil
			},
		}},
	}
}
