package goals

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/bkit/bkit/lib/state"
)

// wsDoc: 4 CPUs and a GPU; n projects, each with a CPU and a GPU app version and a
// few tasks of each, some received long ago, some with deadlines they cannot meet.
func wsDoc(n int) *state.Document {
	d := &state.Document{
		Version: 1,
		Host: state.Host{
			Resources: []state.Resource{{Type: "cpu", Instances: 4, Flops: 1e9}, {Type: "NVIDIA", Instances: 1, Flops: 2e10}},
			TimeStats: state.TimeStats{OnFrac: 0.9, ActiveFrac: 0.8, GPUActiveFrac: 0.7, ConnectedFrac: 1},
		},
		Preferences: state.Preferences{WorkBufMinDays: 0.1, WorkBufAdditionalDays: 0.5, CPUSchedulingPeriod: 3600},
	}
	for p := range n {
		addProject(d, p)
	}
	return d
}

func addProject(d *state.Document, p int) {
	name := fmt.Sprint("P", p)
	d.Projects = append(d.Projects, state.Project{Name: name, ResourceShare: float64(1 + p%3),
		Resources: []state.ProjectResource{{Type: "cpu", AccumulateDebt: true}, {Type: "NVIDIA", AccumulateDebt: true}}})
	d.AppVersions = append(d.AppVersions,
		state.AppVersion{Name: name + "_cpu", Project: name, AvgNCPUs: 1},
		state.AppVersion{Name: name + "_gpu", Project: name, AvgNCPUs: 0.2, Coproc: &state.CoprocUsage{Type: "NVIDIA", Count: 1}})
	for k := range 6 {
		av := name + "_cpu"
		if k%3 == 2 {
			av = name + "_gpu"
		}
		d.Tasks = append(d.Tasks, state.Task{Name: fmt.Sprint(name, "_t", len(d.Tasks)), Project: name, AppVersion: av,
			State: state.TaskReady, EstimatedFlops: float64(1+k) * 3e12, ReceivedTime: float64(k * 100),
			ReportDeadline: float64(20000 + (p*7+k*13)%40*3000)})
	}
}

// TestWorkspaceIsPlain: one Workspace used call after call, on documents whose tasks
// run, finish, arrive and are abandoned, whose debts, backoffs and RPC times move and
// which grow past the names compared one by one and lose a resource and projects,
// answers as the plain functions do, each call on a fresh document of the same history;
// a quiet one too, without the words.
func TestWorkspaceIsPlain(t *testing.T) {
	plain, ws, quiet := wsDoc(3), wsDoc(3), wsDoc(3)
	var w Workspace
	q := Workspace{Quiet: true}
	opts := cmpopts.EquateEmpty()
	for i := range 150 {
		now := float64(i * 600)
		for _, d := range []*state.Document{plain, ws, quiet} {
			mutate(d, i, now)
		}
		if diff := cmp.Diff(Needs(plain), w.Needs(ws), opts); diff != "" {
			t.Fatalf("call %d: needs (-Needs +Workspace):\n%s", i, diff)
		}
		for _, asked := range [][]int{nil, {0}, {1, 2}} {
			want, wantOK := Request(plain, now, asked)
			got, ok := w.Request(ws, now, asked)
			if diff := cmp.Diff(want, got, opts); diff != "" || ok != wantOK {
				t.Fatalf("call %d, asked %v: request %v, want %v (-Request +Workspace):\n%s", i, asked, ok, wantOK, diff)
			}
			got, ok = q.Request(quiet, now, asked)
			want.Reason = ""
			if diff := cmp.Diff(want, got, opts); diff != "" || ok != wantOK {
				t.Fatalf("call %d, asked %v: quiet request %v, want %v (-Request without its reason +quiet Workspace):\n%s", i, asked, ok, wantOK, diff)
			}
		}
		for _, asked := range [][]int{nil, {0}} {
			want, wantOK := Next(plain, now, asked)
			got, ok := w.Next(ws, now, asked)
			if diff := cmp.Diff(want, got, opts); diff != "" || ok != wantOK {
				t.Fatalf("call %d, asked %v: next %v, want %v (-Next +Workspace):\n%s", i, asked, ok, wantOK, diff)
			}
			got, ok = q.Next(quiet, now, asked)
			want.Why, want.Request.Reason = "", ""
			if diff := cmp.Diff(want, got, opts); diff != "" || ok != wantOK {
				t.Fatalf("call %d, asked %v: quiet next %v, want %v (-Next without its words +quiet Workspace):\n%s", i, asked, ok, wantOK, diff)
			}
		}
		exhaustive = true // the plain pass without its shortcuts, too
		want := Schedule(plain, now)
		exhaustive = false
		if diff := cmp.Diff(want, w.Schedule(ws, now), opts); diff != "" {
			t.Fatalf("call %d: abandoned (-Schedule +Workspace):\n%s", i, diff)
		}
		if diff := cmp.Diff(want, q.Schedule(quiet, now), opts); diff != "" {
			t.Fatalf("call %d: abandoned (-Schedule +quiet Workspace):\n%s", i, diff)
		}
		used := make([][]float64, len(plain.Projects))
		for p := range used {
			used[p] = []float64{float64((i+p)%3) * 0.7, float64((i+p)%2) * 0.5}[:len(plain.Host.Resources)]
		}
		Account(plain, used, 600, now+600)
		w.Account(ws, used, 600, now+600)
		q.Account(quiet, used, 600, now+600)
		if diff := cmp.Diff(plain, ws, opts); diff != "" {
			t.Fatalf("call %d: document (-plain functions +Workspace):\n%s", i, diff)
		}
		if plain.Request != nil {
			quiet.Request.Reason = plain.Request.Reason // the one difference Quiet makes
		}
		if diff := cmp.Diff(plain, quiet, opts); diff != "" {
			t.Fatalf("call %d: document (-plain functions +quiet Workspace):\n%s", i, diff)
		}
	}
}

// mutate moves d on by call i at now: the running tasks compute, some finish and are
// reported, new ones arrive, debts, backoffs and RPC times change, projects come past
// the names compared one by one (linearMax) and go again, and the GPU goes.
func mutate(d *state.Document, i int, now float64) {
	switch i {
	case 30: // past the names compared one by one
		for p := len(d.Projects); p < 11; p++ {
			addProject(d, p)
		}
	case 80: // the GPU goes, and its versions and tasks
		d.Host.Resources = d.Host.Resources[:1]
		d.AppVersions = slices.DeleteFunc(d.AppVersions, func(av state.AppVersion) bool { return av.Coproc != nil })
		d.Tasks = slices.DeleteFunc(d.Tasks, func(t state.Task) bool { return strings.HasSuffix(t.AppVersion, "_gpu") })
		for p := range d.Projects {
			d.Projects[p].Resources = d.Projects[p].Resources[:1]
		}
	case 110: // projects go
		d.Projects = d.Projects[:4]
		keep := func(project string) bool {
			return slices.ContainsFunc(d.Projects, func(p state.Project) bool { return p.Name == project })
		}
		d.AppVersions = slices.DeleteFunc(d.AppVersions, func(av state.AppVersion) bool { return !keep(av.Project) })
		d.Tasks = slices.DeleteFunc(d.Tasks, func(t state.Task) bool { return !keep(t.Project) })
	}
	d.Tasks = slices.DeleteFunc(d.Tasks, func(t state.Task) bool { return t.State == state.TaskDone && (i+len(t.Name))%4 == 0 })
	for k := range d.Tasks {
		t := &d.Tasks[k]
		switch {
		case t.State == state.TaskRunning:
			t.FlopsDone = min(t.EstimatedFlops, t.FlopsDone+6e11)
			t.CPUTime += 600
			if t.FlopsDone >= t.EstimatedFlops {
				t.State, t.CompletedTime = state.TaskDone, now
			}
		case (i+k)%9 == 0 && t.State == state.TaskPreempted:
			t.State = state.TaskReady // as if the pass had not come yet
		}
	}
	if i%4 == 0 { // a new task for one project
		p := i % len(d.Projects)
		name := d.Projects[p].Name
		d.Tasks = append(d.Tasks, state.Task{Name: fmt.Sprint(name, "_n", i), Project: name, AppVersion: name + "_cpu",
			State: state.TaskReady, EstimatedFlops: float64(1+i%5) * 2e12, ReceivedTime: now, ReportDeadline: now + float64(3000+i%7*4000)})
	}
	p := &d.Projects[i%len(d.Projects)]
	p.Resources[i%len(p.Resources)].LongTermDebt += float64(i%7-3) * 5000
	p.Resources[(i+1)%len(p.Resources)].BackoffUntil = now + float64(i%3*600)
	p.MinRPCTime = now + float64(i%2*300)
	p.NRPCFailures = i % 3 % 2
}
