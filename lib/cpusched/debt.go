package cpusched

import (
	"github.com/bkit/bkit/lib/state"
)

// workDone is step 1 on one resource: the work each project's running tasks did since
// the last pass (done[p], added to) and their total, in CPU seconds for the CPU and
// instance-seconds of elapsed time for a coprocessor.
//
// mixed[p] says whether project p's candidates are out of sortCandidates' order (nil:
// not known). A list in order has its running candidates first (rank 0): the look
// stops at its first other one, where the rest would add nothing.
func workDone(tasks []state.Task, byProject [][]candidate, mixed []bool, resource string, done []float64) float64 {
	var total float64
	for p, cands := range byProject {
		inOrder := mixed != nil && !mixed[p]
		for _, c := range cands {
			if c.rank != 0 { // not running (group ranked it by its state)
				if inOrder {
					break
				}
				continue
			}
			t := &tasks[c.task]
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

// settleDebts is step 2 on resource rp.Type. On the CPU, seed 001's rule on the
// project's debt: a project without a runnable task there (runnable[p] == 0) gets debt 0
// and no part in the share sum; the others lose the work they got (done[p]) and gain
// their share of rp.TotalWorkDone. On a coprocessor, the seed 002 long-term debts are
// read instead (readDebts). Each project's debt is also written to debts[p]. Unless
// quiet, the projects with work or a debt before are added to rp.Projects.
func settleDebts(doc *state.Document, rp *ResourcePass, runnable []int, done, debts []float64, quiet bool) {
	if rp.Type != state.ResourceCPU {
		readDebts(doc, rp, runnable, done, debts, quiet)
		return
	}
	var shareTotal float64
	nWithWork := 0
	for p := range doc.Projects {
		if runnable[p] > 0 {
			shareTotal += doc.Projects[p].ResourceShare
			nWithWork++
		}
	}
	for p := range doc.Projects {
		debt := &doc.Projects[p].Debt
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

// readDebts is step 2 on a coprocessor: the debt a project brings to the choice is its
// seed 002 long-term debt on the resource, as bdevices' debt stage keeps it (DESIGN §5:
// "GPU task scheduling on the client uses the per-resource debts of seed 002 in the
// manner seed 001 uses CPU debt"). It is read, never changed here: the debt stage
// already counts every instance-second the projects got, and counting them again would
// count them twice. debts[p] is the project's debt, 0 for a project without a runnable
// task on the resource (it competes for nothing). Both are in instance-seconds of the
// resource, as the expected pay-off × instances that step 3 takes off the anticipated
// debt. Unless quiet, the projects with work or a debt are added to rp.Projects, their
// debt before and after alike. (The field sched_debt, a coprocessor debt this pass once
// kept by seed 001's rule, is neither read nor written: docs/decisions.md.)
func readDebts(doc *state.Document, rp *ResourcePass, runnable []int, done, debts []float64, quiet bool) {
	for p := range doc.Projects {
		ltd := longTermDebt(&doc.Projects[p], rp.Type)
		debts[p] = 0
		if runnable[p] > 0 {
			debts[p] = ltd
		}
		if (runnable[p] > 0 || ltd != 0) && !quiet {
			rp.Projects = append(rp.Projects, ProjectDebt{Project: doc.Projects[p].Name, Runnable: runnable[p], WorkDone: done[p], DebtBefore: ltd, DebtAfter: ltd})
		}
	}
}

// longTermDebt is project p's seed 002 long-term debt on a resource: its entry's
// long_term_debt, or 0 when it has no entry for the resource (a missing entry means
// all zero). It adds no entry: a pass leaves the projects' resource entries as it found
// them.
func longTermDebt(p *state.Project, resource string) float64 {
	for i := range p.Resources {
		if p.Resources[i].Type == resource {
			return p.Resources[i].LongTermDebt
		}
	}
	return 0
}

// shareFraction is a project's part of the work: its share of the shares of projects with
// work, or an equal part when all of those shares are 0 (the seed would divide by 0).
func shareFraction(share, total float64, n int) float64 {
	if total > 0 {
		return share / total
	}
	return 1 / float64(n)
}
