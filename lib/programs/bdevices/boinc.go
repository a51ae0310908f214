package bdevices

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"

	"github.com/bkit/bkit/lib/boincpolicy"
	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/state"
)

// boincRequest is bdevices request --policy boinc: BOINC's work-fetch choice
// (boincpolicy.ChooseProject) recorded in doc.Request, with a table of the
// simulation per resource and each project's backoffs.
func boincRequest(doc *state.Document, now float64, asked []int) func(io.Writer) error {
	var ws boincpolicy.Workspace
	c := ws.ChooseProject(doc, now)
	req := c.Request
	req.Coprocs = slices.Clone(req.Coprocs)
	switch {
	case c.Project < 0:
		req = state.WorkRequest{Time: now, Reason: "no request: boinc: no project that may be asked has a resource whose saturated time is below work_buf_min"}
	case slices.Contains(asked, c.Project):
		req = state.WorkRequest{Time: now, Reason: fmt.Sprintf("no request: boinc chose %s, already asked at this step", req.Project)}
	}
	doc.Request = &req
	sims := slices.Clone(ws.Sim)
	return func(w io.Writer) error {
		fmt.Fprintf(w, "Work fetch (policy boinc: today's BOINC client) at %s; work_buf_min %s s, work_buf_total %s s\n\n", cliutil.When(now),
			cliutil.Num(boincpolicy.WorkBufMin(&doc.Preferences)), cliutil.Num(boincpolicy.WorkBufTotal(&doc.Preferences)))
		t := cliutil.NewTable(w, "resource", "saturated", "shortfall", "idle now")
		for _, s := range sims {
			t.Append([]string{s.Type, cliutil.Num(s.Saturated), cliutil.Num(s.Shortfall), cliutil.Num(s.IdleNow)})
		}
		if err := t.Render(); err != nil {
			return err
		}
		fmt.Fprintln(w)
		t = cliutil.NewTable(w, "project", "resource", "backoff")
		for p := range doc.Projects {
			pr := &doc.Projects[p]
			for _, r := range doc.Host.Resources {
				t.Append([]string{pr.Name, r.Type, backoff(pr, entry(pr, r.Type), now)})
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
		return requestLine(w, doc.Request)
	}
}

// boincReply is bdevices reply --policy boinc: BOINC's backoffs
// (boincpolicy.HandleReply) for the project that replied.
func boincReply(doc *state.Document, p int, req *state.WorkRequest, jobs map[string]int, now float64, rng *rand.Rand) {
	boincpolicy.HandleReply(doc, p, req, jobs, now, rng)
}
