package state

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// semantics' steps, one by one: each reports its own problems, in document order, and
// fills in the names the next steps look up.

func checkProblems(t *testing.T, step string, v *validator, want ...string) {
	t.Helper()
	if d := cmp.Diff(want, v.problems); d != "" {
		t.Errorf("%s problems (-want +got):\n%s", step, d)
	}
}

func TestHostResources(t *testing.T) {
	var v validator
	rs := map[string]Resource{}
	v.hostResources([]Resource{{Type: "cpu", Instances: 0, Flops: 0}, {Type: ""}, {Type: "NVIDIA", Instances: 1}, {Type: "NVIDIA", Instances: 2}}, rs)
	checkProblems(t, "host resources", &v,
		"host.resources[0].instances: the CPU needs at least 1 instance, got 0",
		"host.resources[0].flops: the CPU's FLOPS must be > 0, got 0",
		"host.resources[1].type: must not be empty",
		`host.resources[3].type: duplicate resource type "NVIDIA"`)
	if len(rs) != 3 || rs["NVIDIA"].Instances != 2 {
		t.Errorf("resources by type = %v, want cpu, \"\" and the last NVIDIA", rs)
	}
	v = validator{}
	v.hostResources([]Resource{{Type: "NVIDIA", Instances: 1}}, map[string]Resource{})
	checkProblems(t, "no CPU", &v, "host.resources: no resource of type cpu")
}

func TestProjects(t *testing.T) {
	doc := &Document{
		Host: Host{Resources: []Resource{{Type: "cpu", Instances: 1, Flops: 1}, {Type: "NVIDIA", Instances: 1}}},
		Projects: []Project{
			{Name: "A", Resources: []ProjectResource{{Type: "NVIDIA"}, {Type: "NVIDIA"}, {Type: "ATI"}}},
			{Name: ""},
			{Name: "A", Resources: []ProjectResource{{Type: "cpu", SchedDebt: 5}}},
		},
	}
	var v validator
	projects := map[string]int{}
	v.projects(doc, map[string]Resource{"cpu": doc.Host.Resources[0], "NVIDIA": doc.Host.Resources[1]}, projects)
	checkProblems(t, "projects", &v,
		`projects[0].resources[1].type: duplicate resource type "NVIDIA"`,
		`projects[0].resources[2].type: unknown resource type "ATI" (the host has cpu, NVIDIA)`,
		"projects[1].name: must not be empty",
		`projects[2].name: duplicate project name "A"`,
		"projects[2].resources[0].sched_debt: not used for the CPU (its scheduling debt is projects[2].debt)")
	if d := cmp.Diff(map[string]int{"A": 2, "": 1}, projects); d != "" {
		t.Errorf("project indices (-want +got):\n%s", d)
	}
}

func TestApps(t *testing.T) {
	var v validator
	apps := map[[2]string]bool{}
	v.apps([]App{{Project: "A", Name: "x"}, {Project: "B", Name: "x"}, {Project: "A", Name: ""}, {Project: "A", Name: "x"}}, map[string]int{"A": 0}, apps)
	checkProblems(t, "apps", &v,
		`apps[1].project: unknown project "B"`,
		"apps[2].name: must not be empty",
		`apps[3].name: duplicate app "x" in project "A"`)
	if d := cmp.Diff(map[[2]string]bool{{"A", "x"}: true, {"B", "x"}: true, {"A", ""}: true}, apps); d != "" {
		t.Errorf("apps (-want +got):\n%s", d)
	}
}

func TestAppVersions(t *testing.T) {
	doc := &Document{
		Host: Host{Resources: []Resource{{Type: "cpu", Instances: 2, Flops: 1}, {Type: "NVIDIA", Instances: 1}}},
		AppVersions: []AppVersion{
			{Name: "ok", Project: "A", App: "x", AvgNCPUs: 1},
			{Name: "ok", Project: "B", App: "y", AvgNCPUs: 3},
			{Name: "", Project: "A", AvgNCPUs: 0},
			{Name: "g1", Project: "A", AvgNCPUs: 0.5, Coproc: &CoprocUsage{Type: "cpu", Count: 1}},
			{Name: "g2", Project: "A", Coproc: &CoprocUsage{Type: "ATI", Count: 1}},
			{Name: "g3", Project: "A", Coproc: &CoprocUsage{Type: "NVIDIA", Count: 2}},
			{Name: "g4", Project: "A", Coproc: &CoprocUsage{Type: "NVIDIA", Count: 1}},
		},
	}
	resources := map[string]Resource{"cpu": doc.Host.Resources[0], "NVIDIA": doc.Host.Resources[1]}
	var v validator
	versions := map[string]int{}
	v.appVersions(doc, resources, map[string]int{"A": 0}, map[[2]string]bool{{"A", "x"}: true}, versions)
	checkProblems(t, "app versions", &v,
		`app_versions[1].name: duplicate app version name "ok"`,
		`app_versions[1].project: unknown project "B"`,
		`app_versions[1].app: unknown app "y" in project "B"`,
		"app_versions[1].avg_ncpus: uses 3 CPUs but the host has 2",
		"app_versions[2].name: must not be empty",
		"app_versions[2].avg_ncpus: must be > 0 for a version that uses no coprocessor, got 0",
		"app_versions[3].coproc.type: cpu is not a coprocessor; use avg_ncpus",
		`app_versions[4].coproc.type: unknown resource type "ATI" (the host has cpu, NVIDIA)`,
		"app_versions[5].coproc.count: uses 2 instances of NVIDIA but the host has 1")
	if len(versions) != 6 || versions["ok"] != 1 || versions["g4"] != 6 {
		t.Errorf("version indices = %v", versions)
	}
	// Without a CPU (reported by hostResources) the CPU count is not checked again.
	v = validator{}
	v.appVersions(doc, map[string]Resource{"NVIDIA": doc.Host.Resources[1]}, map[string]int{"A": 0, "B": 1}, map[[2]string]bool{{"A", "x"}: true, {"B", "y"}: true}, map[string]int{})
	for _, p := range v.problems {
		if p == "app_versions[1].avg_ncpus: uses 3 CPUs but the host has 2" {
			t.Errorf("CPU count checked without a CPU: %s", p)
		}
	}
}

func TestTasks(t *testing.T) {
	doc := &Document{
		AppVersions: []AppVersion{{Name: "a", Project: "A"}},
		Tasks: []Task{
			{Name: "t", Project: "A", AppVersion: "a", CPUTime: 5, CPUTimeAtLastSched: 5},
			{Name: "t", Project: "B", AppVersion: "a"},
			{Name: "", Project: "A", AppVersion: "b"},
			{Name: "u", Project: "A", AppVersion: "a", CPUTime: 1, CPUTimeAtLastSched: 2, ElapsedTime: 3, ElapsedTimeAtLastSched: 4},
		},
	}
	var v validator
	v.tasks(doc, map[string]int{"A": 0}, map[string]int{"a": 0})
	checkProblems(t, "tasks", &v,
		`tasks[1].name: duplicate task name "t"`,
		`tasks[1].project: unknown project "B"`,
		`tasks[1].app_version: app version "a" belongs to project "A", not "B"`,
		"tasks[2].name: must not be empty",
		`tasks[2].app_version: unknown app version "b"`,
		"tasks[3].cpu_time_at_last_sched: 2 is more than cpu_time 1",
		"tasks[3].elapsed_time_at_last_sched: 4 is more than elapsed_time 3")
}
