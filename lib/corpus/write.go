package corpus

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// The files of a scenario directory, as BOINC's emulator and lib/boincxml read them.
const (
	ClientState = "client_state.xml"
	GlobalPrefs = "global_prefs.xml"
)

// coprocTag is the host_info element of each GPU type (lib/coproc.cpp's names).
var coprocTag = map[string]string{"NVIDIA": "coproc_cuda", "ATI": "coproc_ati"}

// planClass names a GPU type's app versions, as projects do, and haveLib is the flag
// BOINC's client wants on the host's GPU before it uses a version of that plan class
// (RESOURCE_USAGE::check_gpu_libs: without it BOINC's emulator leaves the version out).
var (
	planClass = map[string]string{"NVIDIA": "cuda", "ATI": "ati"}
	haveLib   = map[string]string{"NVIDIA": "have_cuda", "ATI": "have_cal"}
)

func num(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// Describe is a one-line account of the scenario, for the comment at the top of its
// client_state.xml and the corpus's index.
func (s *Scenario) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d CPU", s.NCPUs)
	if s.NCPUs > 1 {
		b.WriteString("s")
	}
	for _, g := range s.GPUs {
		fmt.Fprintf(&b, ", %s GPU %gx a CPU", g.Type, g.Speed)
	}
	if s.OnFrac < 1 {
		fmt.Fprintf(&b, "; on %g in %.3gh spells", s.OnFrac, s.OnLambda/3600)
	}
	if s.ActiveFrac < 1 {
		fmt.Fprintf(&b, "; active %g", s.ActiveFrac)
	}
	if len(s.GPUs) > 0 && s.GPUActiveFrac < 1 {
		fmt.Fprintf(&b, "; GPU active %g", s.GPUActiveFrac)
	}
	fmt.Fprintf(&b, "; buffer %g+%g d.", s.BufMin, s.BufAdditional)
	for _, p := range s.Projects {
		fmt.Fprintf(&b, " %s (share %g", p.Name, p.Share)
		if p.UpFrac < 1 {
			fmt.Fprintf(&b, ", up %g", p.UpFrac)
		}
		b.WriteString("):")
		for i, a := range p.Apps {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %s %.3gh jobs, latency %.3gx, estimate %.2fx", a.Description, a.Runtime/3600, a.Latency/a.Runtime, a.EstMean/a.Fpops)
		}
		b.WriteString(".")
	}
	return b.String()
}

// Files are the scenario's files by name.
func (s *Scenario) Files() map[string][]byte {
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("<client_state>\n<!-- %s (bsim gen --seed %d, scenario %d): %s -->\n", s.Name(), s.Seed, s.Index, strings.ReplaceAll(s.Describe(), "--", "-"))
	w("<host_info><p_ncpus>%d</p_ncpus><p_fpops>%s</p_fpops>", s.NCPUs, num(s.Flops))
	if len(s.GPUs) > 0 {
		// One device of each type: BOINC values an instance at 0.2 x peak_flops x count.
		w("<coprocs>")
		for _, g := range s.GPUs {
			w("<%s><count>1</count><peak_flops>%s</peak_flops><%s>1</%s></%s>", coprocTag[g.Type], num(5*g.Speed*s.Flops), haveLib[g.Type], haveLib[g.Type], coprocTag[g.Type])
		}
		w("</coprocs>")
	}
	w("</host_info>\n")
	w("<time_stats><on_frac>%s</on_frac><on_lambda>%s</on_lambda><active_frac>%s</active_frac><active_lambda>%s</active_lambda>",
		num(s.OnFrac), num(s.OnLambda), num(s.ActiveFrac), num(s.ActiveLambda))
	if len(s.GPUs) > 0 {
		w("<gpu_active_frac>%s</gpu_active_frac><gpu_active_lambda>%s</gpu_active_lambda>", num(s.GPUActiveFrac), num(s.GPUActiveLambda))
	}
	w("<connected_frac>1</connected_frac></time_stats>\n")
	for _, p := range s.Projects {
		w("<project><master_url>http://%s.example.org/</master_url><project_name>%s</project_name><resource_share>%s</resource_share>",
			strings.ToLower(p.Name), p.Name, num(p.Share))
		if p.UpFrac < 1 {
			w("<available><frac>%s</frac><lambda>%s</lambda></available>", num(p.UpFrac), num(p.UpLambda))
		}
		w("</project>\n")
		for _, a := range p.Apps {
			w("<app><name>%s</name><latency_bound>%s</latency_bound><fpops_est>%s</fpops_est><fpops><mean>%s</mean><std_dev>%s</std_dev></fpops><weight>%s</weight></app>\n",
				a.Name, num(a.Latency), num(a.Fpops), num(a.EstMean), num(a.EstStdDev), num(a.Weight))
			for _, v := range a.Versions {
				w("<app_version><app_name>%s</app_name><version_num>1</version_num>", a.Name)
				if v.GPU != "" {
					w("<plan_class>%s</plan_class>", planClass[v.GPU])
				}
				w("<avg_ncpus>%s</avg_ncpus><flops>%s</flops>", num(v.AvgCPUs), num(v.Flops))
				if v.GPU != "" {
					w("<coproc><type>%s</type><count>1</count></coproc>", v.GPU)
				}
				w("</app_version>\n")
			}
		}
	}
	w("</client_state>\n")
	prefs := fmt.Sprintf("<global_preferences>\n<cpu_scheduling_period_minutes>60</cpu_scheduling_period_minutes>\n"+
		"<work_buf_min_days>%s</work_buf_min_days>\n<work_buf_additional_days>%s</work_buf_additional_days>\n"+
		"<max_ncpus_pct>100</max_ncpus_pct>\n<cpu_usage_limit>100</cpu_usage_limit>\n<run_if_user_active/>\n<run_gpu_if_user_active/>\n</global_preferences>\n",
		num(s.BufMin), num(s.BufAdditional))
	return map[string][]byte{ClientState: b.Bytes(), GlobalPrefs: []byte(prefs)}
}
