package bserver

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/store"
	"github.com/urfave/cli/v3"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "count apps, hosts, workunits and results by state",
		UsageText: "bserver status --db DSN [-o table|json]",
		Description: cliutil.Help(`
Counts the apps, app versions, hosts and workunits (and how many of them have a
canonical result, chosen by bretry's validator), the results by app, server
state (unsent, in_progress, over) and outcome (init, success, client_error,
no_reply, …), the workunits bretry gave up on by app and reason (not_sent,
errors, ndet_done; 'bretry report' lists them), and the lifecycle's backlog:
workunits waiting for 'bserver assimilate' (of them, those whose hand-over failed
and how often), assimilated, waiting for 'bserver delete-files' and done, files
decided on but not yet deleted, workunits waiting for 'bserver purge' (their files
deleted; some wait for --older-than) and purge batches claimed but not finished
(purged workunits are counted nowhere: their rows are in the archive); and each cron
job's recorded runs (bretry, blocality's daemons, assimilate, delete-files, purge: how
many, how many failed, the last one's start, duration and result, and how many
started since and have not finished: running or killed); as a table or as JSON.`,
			[]string{"bserver status --db project.db", "bserver status --db project.db -o json | jq '.results'"}, ""),
		Flags: []cli.Flag{cliutil.FormatFlag("table", "json")},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			return report(ctx, cmd, (*store.Store).Status, statusTable)
		},
	}
}

// statusTable writes bserver status's tables.
func statusTable(w io.Writer, st *store.Status) error {
	fmt.Fprintf(w, "apps %d, app versions %d, hosts %d, workunits %d (%d validated)\n", st.Apps, st.AppVersions, st.Hosts, st.Workunits, st.Validated)
	t := cliutil.NewTable(w, "app", "server state", "outcome", "results")
	for _, c := range st.Results {
		t.Append(c.App, c.ServerState, c.Outcome, strconv.FormatInt(c.Count, 10))
	}
	if err := t.Render(); err != nil {
		return err
	}
	lc := st.Lifecycle
	fmt.Fprintf(w, "assimilation: %d waiting (%d failing, %d failures), %d assimilated; file deletion: %d waiting, %d done, %d files pending; purge: %d waiting, %d batches in progress (%d being written)\n",
		lc.AssimilateReady, lc.AssimilateFailing, lc.AssimilateFailures, lc.Assimilated, lc.FileDeletePending, lc.FilesDeleted, lc.DeletePending,
		lc.FilesDeleted, lc.PurgeBatches, lc.PurgeWriting)
	if len(st.GiveUps) > 0 {
		t = cliutil.NewTable(w, "app", "given up: reason", "workunits")
		for _, c := range st.GiveUps {
			t.Append(c.App, c.Reason, strconv.FormatInt(c.Count, 10))
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	if len(st.CronJobs) == 0 {
		return nil
	}
	t = cliutil.NewTable(w, "cron job", "app", "runs", "failed", "last start", "last duration s", "last result", "running")
	for _, j := range st.CronJobs {
		t.Append(j.Job, j.App, strconv.FormatInt(j.Runs, 10), strconv.FormatInt(j.Failures, 10),
			strconv.FormatFloat(j.LastStart, 'f', 0, 64), strconv.FormatFloat(j.LastDuration, 'f', 3, 64),
			lastResult(j), strconv.FormatInt(j.Running, 10))
	}
	return t.Render()
}

// lastResult says how a job's last finished run ended: "ok", or "failed: " and its
// error, or "-" before any run finished.
func lastResult(j store.CronJob) string {
	switch {
	case j.Runs == 0:
		return "-"
	case j.LastSuccess:
		return "ok"
	}
	return "failed: " + j.LastMessage
}
