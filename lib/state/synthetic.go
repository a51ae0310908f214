package state

import "fmt"

// Synthetic builds a valid, deterministic document of the given size for benchmarks:
// nProjects projects with shares 1..10, nTasks tasks spread over them in every runnable
// state, on a host with nCPUs CPUs. The same arguments always give the same document.
func Synthetic(nProjects, nTasks, nCPUs int) *Document {
	doc := defaults()
	doc.Version = Version
	doc.Host.Resources = []Resource{{Type: ResourceCPU, Instances: nCPUs, Flops: 3e9}}
	for p := 0; p < nProjects; p++ {
		name := fmt.Sprintf("project%03d", p)
		doc.Projects = append(doc.Projects, Project{
			Name: name, MasterURL: "https://" + name + ".example.org/",
			ResourceShare: float64(1 + p%10), Debt: float64((p*7919)%2000 - 1000),
		})
		doc.AppVersions = append(doc.AppVersions, AppVersion{Name: name + "_cpu", Project: name, AvgNCPUs: 1})
	}
	running := 0
	for i := 0; i < nTasks; i++ {
		p := (i * 31) % nProjects
		name := doc.Projects[p].Name
		t := Task{
			Name: fmt.Sprintf("%s_task%05d", name, i), Project: name, AppVersion: name + "_cpu",
			State:          TaskReady,
			EstimatedFlops: float64(1+i%7) * 1e13,
			ReportDeadline: 1.7e9 + float64((i*104729)%(14*86400)),
			ReceivedTime:   1.7e9 - 86400,
		}
		switch {
		case running < nCPUs:
			t.State, t.CPUTime, t.CPUTimeAtLastSched, t.FlopsDone = TaskRunning, 3600, 1800, 3600*3e9
			running++
		case i%50 == 0:
			t.State, t.CPUTime, t.CPUTimeAtLastSched, t.FlopsDone = TaskPreempted, 600, 600, 600*3e9
		case i%97 == 0:
			t.State = TaskDone
		}
		doc.Tasks = append(doc.Tasks, t)
	}
	doc.CPUSched = &CPUSched{LastPass: 1.7e9 - 1800, NextPass: 1.7e9 + 1800, NextPassReason: "scheduling period"}
	return &doc
}
