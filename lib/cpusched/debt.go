package cpusched

import (
	"github.com/bkit/bkit/lib/state"
)

// workDone is step 1 on one resource: the work each project's running tasks did since
// the last pass (done[p], added to) and their total, in CPU seconds for the CPU and
// instance-seconds of elapsed time for a coprocessor.
func workDone(tasks []state.Task, byProject [][]candidate, resource string, done []float64) float64 {
	var total float64
	for p, cands := range byProject {
		for _, c := range cands {
			t := &tasks[c.task]
			if t.State != state.TaskRunning {
				continue
			}
			var x float64
			if resource == state.ResourceCPU {
				x = t.CPUTime - t.CPUTimeAtLastSched
			} else {
				x = (t.ElapsedTime - t.ElapsedTimeAtLastSched) * c.need
			}
			done[p] += x
			total += x
		}
	}
	return total
}

// settleDebts is step 2 on resource rp.Type: a project without a runnable task there
// (runnable[p] == 0) gets debt 0 and no part in the share sum; the others lose the work
// they got (done[p]) and gain their share of rp.TotalWorkDone. Each project's new debt
// is also written to debts[p]. Unless quiet, the projects with work or a debt before are
// added to rp.Projects.
func settleDebts(doc *state.Document, rp *ResourcePass, runnable []int, done, debts []float64, quiet bool) {
	var shareTotal float64
	nWithWork := 0
	for p := range doc.Projects {
		if runnable[p] > 0 {
			shareTotal += doc.Projects[p].ResourceShare
			nWithWork++
		}
	}
	for p := range doc.Projects {
		debt := debtOf(&doc.Projects[p], rp.Type)
		pd := ProjectDebt{Project: doc.Projects[p].Name, Runnable: runnable[p], WorkDone: done[p], DebtBefore: *debt}
		if runnable[p] == 0 {
			*debt = 0
		} else {
			pd.ShareFraction = shareFraction(doc.Projects[p].ResourceShare, shareTotal, nWithWork)
			*debt += pd.ShareFraction*rp.TotalWorkDone - done[p]
		}
		pd.DebtAfter = *debt
		debts[p] = *debt
		if (runnable[p] > 0 || pd.DebtBefore != 0) && !quiet {
			rp.Projects = append(rp.Projects, pd)
		}
	}
}

// debtOf is the scheduling debt of a project on a resource: the seed's debt for the CPU,
// the resource entry's scheduling debt for a coprocessor.
func debtOf(p *state.Project, resource string) *float64 {
	if resource == state.ResourceCPU {
		return &p.Debt
	}
	return &p.ResourceState(resource).SchedDebt
}

// shareFraction is a project's part of the work: its share of the shares of projects with
// work, or an equal part when all of those shares are 0 (the seed would divide by 0).
func shareFraction(share, total float64, n int) float64 {
	if total > 0 {
		return share / total
	}
	return 1 / float64(n)
}
