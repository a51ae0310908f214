package bsim

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/rpc"
	"github.com/bkit/bkit/lib/sim"
	"github.com/bkit/bkit/lib/state"
	"github.com/urfave/cli/v3"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:      "serve",
		Usage:     "the emulated project server answers the request in the document (prints ok JOBS SEED, or failed)",
		UsageText: "bsim serve --world FILE --now T --state FILE --in-place",
		Description: cliutil.Help(`
The project of the document's request (brpc poll) answers it, which ends the RPC
session brpc poll recorded. A server that is down
fails the RPC: seed 000's backoff is applied (the master-fetch flag at a tenth
failure in a row, unless the session is a report session) and 'failed' printed. Otherwise the
project's done tasks are reported, jobs are made to fill the request and added to the
document, and 'ok JOBS SEED' is printed: JOBS the jobs per resource type as bdevices
reply --jobs takes them, SEED the seed for bdevices reply --seed.

`+loopNote, []string{`read -r status jobs seed <<<"$(bsim serve --world w.json --now "$now" --state state.json --in-place)"`}, ""),
		Flags:  stageFlags(),
		Action: runServe,
	}
}

func runServe(_ context.Context, cmd *cli.Command) error {
	st, err := restore(cmd)
	if err != nil {
		return err
	}
	in, s := st.in, st.s
	if s.IsLive() {
		return cliutil.Usagef("%s: a live run's servers are real: brpc session talks to them, not bsim serve", cmd.String(flagWorld))
	}
	doc, now := in.Doc, s.Now()
	req := doc.Request
	if req == nil || req.Time != now || req.Project == "" {
		return cliutil.Usagef("%s: no scheduler request at --now %s: run 'brpc poll' first", in.File, exact(now))
	}
	p := slices.IndexFunc(doc.Projects, func(pr state.Project) bool { return pr.Name == req.Project })
	if p < 0 {
		return cliutil.Usagef("%s: request.project %q is not a project of the document", in.File, req.Project)
	}
	report := doc.RPCSession != nil && doc.RPCSession.Kind == rpc.Report.String()
	rep := s.Serve(sim.RPC{Project: p, Request: *req, Report: report}, now)
	rpc.EndSession(doc)
	if err := st.save(cmd); err != nil {
		return err
	}
	if rep.Failed {
		_, err = fmt.Fprintln(cmd.Root().Writer, "failed")
		return err
	}
	var jobs []string
	for _, r := range doc.Host.Resources {
		jobs = append(jobs, r.Type+"="+strconv.Itoa(rep.Jobs[r.Type]))
	}
	_, err = fmt.Fprintf(cmd.Root().Writer, "ok %s %d\n", strings.Join(jobs, ","), rep.Seed)
	return err
}
