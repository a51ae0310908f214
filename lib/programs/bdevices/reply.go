package bdevices

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/goals"
	"github.com/bkit/bkit/lib/prsc"
	"github.com/bkit/bkit/lib/state"
	"github.com/urfave/cli/v3"
)

const (
	flagProject     = "project"
	flagJobs        = "jobs"
	flagRequested   = "requested"
	flagThreeState  = "three-state"
	flagUnsupported = "unsupported"
)

func replyCommand() *cli.Command {
	return &cli.Command{
		Name:      "reply",
		Usage:     "apply a scheduler reply (jobs received per resource, or none) to the backoffs and D flags",
		UsageText: "bdevices reply [--now TIME] [--seed N] [--project NAME] [--jobs TYPE=N,...] [--requested TYPE,...] [--unsupported TYPE,...] [--three-state] [--policy seed|goals|boinc] [--state FILE [--in-place]] [-o json|yaml|table]",
		Description: cliutil.Help(`
Takes in what a scheduler reply brought for the request in the document (written by
'bdevices request'): --jobs lists the jobs received per resource type, TYPE=N separated
by commas (e.g. --jobs cpu=2,NVIDIA=1); types not listed got none, and no --jobs at all
means the reply had no job. The project is --project, by default request.project. The
types asked for are those of the document's request with req_secs or req_instances
above 0 (the request must be for that project), or --requested TYPE,... .

For the project, per resource type R:
  a job of type R arrived      D(P,R) true; R's backoff cleared
  R asked for, no job of it    R's backoff interval grows: 600 s, then doubling, at
                               most 86,400 s; not asked again before --now + interval
                               × a jitter in [0.5, 1) drawn from --seed
  no job at all in the reply   D(P,R) false for every R asked for with req_secs > 0
                               (a type asked for by req_instances alone keeps it;
                               --requested types count as asked with req_secs)
  R named in --unsupported     D(P,R) false, also when jobs of other types came: the
                               project said it has no app version for R (a reply's
                               <no_rsc_apps>, as brpc session takes them)
With --three-state (the seed's proposed change; off by default) a reply without jobs
clears no D: "no work but supported" keeps it, and only the --unsupported types
("not supported") lose it. A project's overall contact backoff is the earliest of its
resource backoffs' ends (shown by -o table).

--policy boinc applies today's BOINC client's rule instead (lib/boincpolicy, BOINC's
client/work_fetch.cpp handle_reply): a type asked for with req_secs > 0 and not sent
is backed off only when it is not backed off already, by 600 s doubling to a day ×
a jitter in [0.5, 1.5); a type sent is cleared; D(P,R) is not touched. seed takes
seed 002's rule above; goals too, but always as --three-state (lib/goals ApplyReply: a
BOINC server that sends nothing has most often refused the jobs it has, and the
project's debt keeps accruing).
-o table shows per resource what was asked and received and D(P,R) and the backoff
before and after.

`+cliutil.SchemaNote,
			[]string{
				"bdevices reply --now 1700000000 --project A --jobs NVIDIA=2 < client.yaml",
				"bdevices reply --now 1700000000 --seed 7 --state client.yaml --in-place   # no jobs",
				"bdevices reply --now 1700000000 --project A --requested cpu,NVIDIA --three-state --unsupported cpu < client.yaml",
			}, ""),
		Flags: append([]cli.Flag{
			cliutil.NowFlag(),
			cliutil.SeedFlag(),
			&cli.StringFlag{Name: flagProject, Usage: "the project that replied, `NAME` (default: request.project)"},
			&cli.StringFlag{Name: flagJobs, Usage: "jobs received per resource type, `TYPE=N,...` (default: none at all)"},
			&cli.StringFlag{Name: flagRequested, Usage: "the resource types asked for, `TYPE,...` (default: from the document's request)"},
			&cli.BoolFlag{Name: flagThreeState, Usage: "use the three-state reply: no work but supported keeps D(P,R); only --unsupported types lose it"},
			cliutil.PolicyFlag(),
			&cli.StringFlag{Name: flagUnsupported, Usage: "the types the project has no app version for (<no_rsc_apps>), `TYPE,...`: they lose D(P,R)"},
		}, cliutil.DocumentFlags("json", "yaml", "table")...),
		Action: runReply,
	}
}

func runReply(_ context.Context, cmd *cli.Command) error {
	var jobs map[string]int
	now, in, err := cliutil.ReadStage(cmd, func() error {
		var err error
		if jobs, err = parseJobs(cmd.String(flagJobs)); err != nil {
			return cliutil.Usagef("--jobs: %v", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	doc := in.Doc
	project := cmd.String(flagProject)
	if project == "" {
		if doc.Request == nil || doc.Request.Project == "" {
			return cliutil.Usagef("%s: no request in the document: give --project (and --requested)", in.File)
		}
		project = doc.Request.Project
	}
	var requested map[string]bool
	var instancesOnly []string
	if s := cmd.String(flagRequested); s != "" {
		requested = map[string]bool{}
		for _, t := range splitList(s) {
			requested[t] = true
		}
		for t := range requested {
			if _, ok := doc.Host.Resource(t); !ok {
				return cliutil.Usagef("--requested: unknown resource type %q (the host has %s)", t, hostTypes(&doc.Host))
			}
		}
	} else {
		if doc.Request == nil || doc.Request.Project != project {
			return cliutil.Usagef("%s: the document's request is not for %q: give --requested", in.File, project)
		}
		requested = prsc.Requested(doc.Request)
		instancesOnly = prsc.InstancesOnly(doc.Request)
	}
	var before []state.ProjectResource
	for i := range doc.Projects {
		if doc.Projects[i].Name == project {
			for _, r := range doc.Host.Resources {
				before = append(before, entry(&doc.Projects[i], r.Type))
			}
		}
	}
	policy, err := cliutil.Policy(cmd)
	if err != nil {
		return err
	}
	if policy == cliutil.PolicyBOINC {
		p := slices.IndexFunc(doc.Projects, func(pr state.Project) bool { return pr.Name == project })
		if p < 0 {
			return cliutil.Usagef("--project: %s has no project %q", in.File, project)
		}
		req := state.WorkRequest{Project: project}
		if doc.Request != nil && doc.Request.Project == project && cmd.String(flagRequested) == "" {
			req = *doc.Request
		} else {
			// --requested: each type counts as asked for with req_secs.
			for t := range requested {
				if t == state.ResourceCPU {
					req.CPUReqSecs = 1
				} else {
					req.Coprocs = append(req.Coprocs, state.CoprocRequest{Type: t, ReqSecs: 1})
				}
			}
		}
		boincReply(doc, p, &req, jobs, now, rng(cmd))
		return cliutil.WriteState(cmd, in, func(w io.Writer) error {
			return replyTable(w, doc, project, requested, jobs, before, now)
		})
	}
	rep := prsc.Reply{Project: project, Jobs: jobs, Unsupported: splitList(cmd.String(flagUnsupported)), InstancesOnly: instancesOnly}
	apply := func() error { return prsc.ApplyReply(doc, requested, rep, cmd.Bool(flagThreeState), now, rng(cmd)) }
	if policy == cliutil.PolicyGoals {
		// goals reads a reply without jobs as the three-state reply (goals.ApplyReply).
		apply = func() error { return goals.ApplyReply(doc, requested, rep, now, rng(cmd)) }
	}
	if err := apply(); err != nil {
		return cliutil.Usagef("%v", err)
	}
	return cliutil.WriteState(cmd, in, func(w io.Writer) error {
		return replyTable(w, doc, project, requested, jobs, before, now)
	})
}

// parseJobs reads TYPE=N,TYPE=N.
func parseJobs(s string) (map[string]int, error) {
	m := map[string]int{}
	for _, item := range splitList(s) {
		t, n, ok := strings.Cut(item, "=")
		if !ok || t == "" {
			return nil, fmt.Errorf("want TYPE=N, got %q", item)
		}
		k, err := strconv.Atoi(n)
		if err != nil || k < 0 {
			return nil, fmt.Errorf("%s: want a number of jobs >= 0, got %q", t, n)
		}
		if _, dup := m[t]; dup {
			return nil, fmt.Errorf("%s given twice", t)
		}
		m[t] = k
	}
	return m, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func hostTypes(h *state.Host) string {
	var ts []string
	for _, r := range h.Resources {
		ts = append(ts, r.Type)
	}
	return strings.Join(ts, ", ")
}

func replyTable(w io.Writer, doc *state.Document, project string, requested map[string]bool, jobs map[string]int, before []state.ProjectResource, now float64) error {
	var p *state.Project
	for i := range doc.Projects {
		if doc.Projects[i].Name == project {
			p = &doc.Projects[i]
		}
	}
	var asked []string
	for t := range requested {
		asked = append(asked, t)
	}
	sort.Strings(asked)
	fmt.Fprintf(w, "Reply from %s at %s; asked for: %s\n\n", project, cliutil.When(now), strings.Join(asked, ", "))
	t := cliutil.NewTable(w, "resource", "asked", "jobs", "D before", "D after", "backoff before", "backoff after")
	for r, res := range doc.Host.Resources {
		after := entry(p, res.Type)
		if err := t.Append([]string{res.Type, strconv.FormatBool(requested[res.Type]), strconv.Itoa(jobs[res.Type]),
			strconv.FormatBool(before[r].AccumulateDebt), strconv.FormatBool(after.AccumulateDebt),
			backoff(&state.Project{}, before[r], now), backoff(&state.Project{}, after, now)}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	until := prsc.ContactBackoffUntil(&doc.Host, p)
	if until > now {
		_, err := fmt.Fprintf(w, "Contact backoff (earliest resource backoff end): until %s.\n", fmtNum(until))
		return err
	}
	_, err := fmt.Fprintln(w, "Contact backoff: none (some resource is not backed off).")
	return err
}
