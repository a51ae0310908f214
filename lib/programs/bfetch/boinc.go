package bfetch

import (
	"fmt"
	"io"
	"strconv"

	"github.com/bkit/bkit/lib/boincpolicy"
	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/state"
)

// boincTable explains policy boinc's work-fetch position (lib/boincpolicy): the
// round-robin simulation's saturated time and shortfall per resource against the
// buffer's marks, and each project's fetch priority and what keeps it from being asked.
// bdevices request --policy boinc makes the request.
func boincTable(w io.Writer, doc *state.Document, now float64) error {
	var ws boincpolicy.Workspace
	c := ws.ChooseProject(doc, now)
	fmt.Fprintf(w, "Work fetch position (policy boinc: today's BOINC client) at %s\n", cliutil.When(now))
	fmt.Fprintf(w, "work_buf_min %s s, work_buf_total %s s: a resource needs work when its saturated time is below work_buf_min\n\n",
		cliutil.Num(boincpolicy.WorkBufMin(&doc.Preferences)), cliutil.Num(boincpolicy.WorkBufTotal(&doc.Preferences)))
	t := cliutil.NewTable(w, "resource", "saturated", "shortfall", "idle now", "deadline misses", "needs work")
	for _, s := range ws.Sim {
		t.Append([]string{s.Type, cliutil.Num(s.Saturated), cliutil.Num(s.Shortfall), cliutil.Num(s.IdleNow), strconv.Itoa(s.Misses),
			strconv.FormatBool(s.Saturated < boincpolicy.WorkBufMin(&doc.Preferences))})
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nProjects (fetch priority: −REC fraction ÷ share fraction − queued work ÷ a full buffer):\n")
	pt := cliutil.NewTable(w, "project", "share", "REC", "priority", "may be asked")
	nR := len(doc.Host.Resources)
	for p := range doc.Projects {
		why := "yes"
		if r := c.ProjectReasons[p]; r != "" {
			why = "no: " + string(r)
		} else {
			for r := 0; r < nR; r++ {
				if x := c.Reasons[p*nR+r]; x != "" {
					why += fmt.Sprintf("; %s: %s", doc.Host.Resources[r].Type, x)
				}
			}
		}
		prio := c.Priority[p]
		if prio == 0 {
			prio = 0 // not −0
		}
		pt.Append([]string{doc.Projects[p].Name, cliutil.Num(doc.Projects[p].ResourceShare), cliutil.Num(doc.Projects[p].REC),
			strconv.FormatFloat(prio, 'f', 4, 64), why})
	}
	if err := pt.Render(); err != nil {
		return err
	}
	if c.Project < 0 {
		_, err := fmt.Fprintf(w, "\nNo request: no project that may be asked has a resource below work_buf_min.\n")
		return err
	}
	_, err := fmt.Fprintf(w, "\nAsk %s: %s.\n", doc.Projects[c.Project].Name, c.Request.Reason)
	return err
}
