package cpusched

import (
	"fmt"
	"testing"

	"github.com/bkit/bkit/lib/state"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// One Workspace used pass after pass, while tasks run, finish, arrive and the document
// grows and shrinks (and once changes its app versions), decides exactly as a fresh
// Schedule and Due on a copy of the document: same documents, same passes, same
// answers. The GPU and a max_concurrent app take the paths a CPU-only host does not.
func TestWorkspaceIsSchedule(t *testing.T) {
	t.Parallel()
	doc := host(3, map[string]float64{"A": 3, "B": 1, "C": 2}, "A", "B", "C")
	doc.Host.Resources = append(doc.Host.Resources, state.Resource{Type: "NVIDIA", Instances: 2, Flops: 1e10})
	doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: "B_gpu", Project: "B", App: "B_app", AvgNCPUs: 0.5, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}})
	doc.Apps = append(doc.Apps, state.App{Project: "B", Name: "B_app", MaxConcurrent: 1})
	mustValid(t, doc)
	var w Workspace
	quiet := Workspace{Quiet: true}
	qdoc := cloneDoc(t, doc)
	n := 0
	for step := 0; step < 120; step++ {
		now := float64(step * 600)
		// Arrivals, some on the GPU.
		if step%3 == 0 {
			for _, p := range []string{"A", "B", "C"} {
				n++
				addTask(doc, fmt.Sprintf("%s%d", p, n), p, state.TaskReady, 0, now+float64((n*7919)%86400))
				doc.Tasks[len(doc.Tasks)-1].ReceivedTime = now
				if p == "B" && n%2 == 0 {
					doc.Tasks[len(doc.Tasks)-1].AppVersion = "B_gpu"
				}
			}
		}
		if step == 60 { // a new app version: the index is built again
			doc.AppVersions = append(doc.AppVersions, state.AppVersion{Name: "C_two", Project: "C", AvgNCPUs: 1})
		}
		qdoc = cloneDoc(t, doc)
		fresh := cloneDoc(t, doc)
		gotDue := w.Due(doc, now)
		wantDue, _ := Due(fresh, now)
		if gotDue != wantDue {
			t.Fatalf("step %d: Workspace.Due %v, Due %v", step, gotDue, wantDue)
		}
		if step%2 == 0 || gotDue {
			got := w.Schedule(doc, now)
			want := Schedule(fresh, now)
			if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
				t.Fatalf("step %d: passes differ (-fresh +workspace):\n%s", step, d)
			}
			if d := cmp.Diff(fresh, doc); d != "" {
				t.Fatalf("step %d: documents differ (-fresh +workspace):\n%s", step, d)
			}
			q := quiet.Schedule(qdoc, now)
			if qdoc.CPUSched.NextPassReason != "" {
				t.Fatalf("step %d: a quiet pass gave the reason %q", step, qdoc.CPUSched.NextPassReason)
			}
			qdoc.CPUSched.NextPassReason = fresh.CPUSched.NextPassReason
			if d := cmp.Diff(fresh, qdoc); d != "" || len(q.Tasks) != 0 || q.NextPass != want.NextPass {
				t.Fatalf("step %d: a quiet pass decides otherwise (-fresh +quiet):\n%s", step, d)
			}
		}
		// Running tasks compute; some finish and leave.
		k := 0
		for i := range doc.Tasks {
			tk := &doc.Tasks[i]
			if tk.State == state.TaskRunning {
				tk.CPUTime += 600
				tk.ElapsedTime += 600
				if (i+step)%5 == 0 {
					continue
				}
			}
			doc.Tasks[k] = *tk
			k++
		}
		doc.Tasks = doc.Tasks[:k]
	}
}

func cloneDoc(t *testing.T, doc *state.Document) *state.Document {
	t.Helper()
	b, err := state.Encode(doc, state.JSON)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := state.Decode(b, "doc")
	if err != nil {
		t.Fatal(err)
	}
	return c
}
