package sim

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strings"

	"github.com/bkit/bkit/lib/state"
)

// Live marks a run whose project servers are real (bserver serve, or any BOINC-style
// scheduler) and reached by the client's own programs (brpc session over HTTP), not
// emulated by 'bsim serve': the world then keeps only the host (its availability, the
// real work of each task, the figures' tallies) and takes up, each time a stage program
// hands it the document, what the session did meanwhile:
//
//   - a task it has not seen came in a reply: it is one more job, and its real work is
//     its estimate (the server's rsc_fpops_est is all there is to know of it);
//   - a task the session marked reported is counted as 'bsim serve' counts a report
//     (late ones waste their FLOPs) and leaves the document;
//   - a task gone from the document without being reported was lost (the host lost its
//     work): it is forgotten;
//   - the RPCs made are the rise of each project's rpc_seqno.
//
// A task that finishes gets an output digest (bkit_output_digest) so the project's
// validator has something to compare: its workunit's (the result name up to its last
// '_'), so replicas agree, except that an app named in Nondeterministic gives with its
// probability a digest of the result's own, as a nondeterministic computation would.
type Live struct {
	Nondeterministic []NondeterministicApp `json:"nondeterministic,omitempty"`
	// Seqno is each project's rpc_seqno as the world last saw it.
	Seqno []int `json:"seqno"`
}

// NondeterministicApp is an app whose results disagree with probability P.
type NondeterministicApp struct {
	App string  `json:"app"`
	P   float64 `json:"p"`
}

// SetLive makes s a live run (see Live); nondeterministic names the apps whose
// results may disagree. Call it on a new run, before its first step.
func (s *Sim) SetLive(nondeterministic []NondeterministicApp) error {
	for _, n := range nondeterministic {
		if n.App == "" || !(n.P >= 0 && n.P <= 1) {
			return fmt.Errorf("nondeterministic app %q: want a name and a probability in [0, 1], got %g", n.App, n.P)
		}
	}
	for _, srv := range s.servers {
		if len(srv.apps) > 0 {
			return fmt.Errorf("project %s: a live run's projects are real servers, so the scenario must give no emulated apps", srv.project)
		}
	}
	s.live = &Live{Nondeterministic: nondeterministic}
	for _, p := range s.doc.Projects {
		s.live.Seqno = append(s.live.Seqno, p.RPCSeqno)
	}
	return nil
}

// IsLive reports whether s is a live run.
func (s *Sim) IsLive() bool { return s.live != nil }

// liveWorld is the Live part of the run's World.
func (s *Sim) liveWorld() *Live {
	if s.live == nil {
		return nil
	}
	l := *s.live
	l.Seqno = make([]int, len(s.doc.Projects))
	for p := range s.doc.Projects {
		l.Seqno[p] = s.doc.Projects[p].RPCSeqno
	}
	return &l
}

// restoreLive takes up a live run's jobs from w and what the document's session did
// since (see Live).
func (s *Sim) restoreLive(w *World) error {
	l := w.Live
	if len(l.Seqno) != len(s.doc.Projects) {
		return fmt.Errorf("the world's live seqno has %d projects, the document %d", len(l.Seqno), len(s.doc.Projects))
	}
	s.live = &Live{Nondeterministic: l.Nondeterministic, Seqno: l.Seqno}
	known := make(map[string]WorldJob, len(w.Jobs))
	for _, j := range w.Jobs {
		known[j.Task] = j
	}
	doc := s.doc
	for p := range doc.Projects {
		if d := doc.Projects[p].RPCSeqno - l.Seqno[p]; d > 0 {
			s.m.rpcs += d
		}
	}
	k := 0
	s.jobs = s.jobs[:0]
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		wj, ok := known[t.Name]
		j := s.newJob(t, job{real: wj.Real, peak: wj.Peak, finished: wj.Finished})
		if !ok {
			j.real = t.EstimatedFlops
			s.m.jobs++
		}
		if t.State == state.TaskReported {
			s.m.report(j.project, t.ReportDeadline < w.Now || !j.finished, j.peak)
			continue
		}
		doc.Tasks[k] = *t
		s.jobs = append(s.jobs, j)
		k++
	}
	doc.Tasks = doc.Tasks[:k]
	s.noteJobs(0)
	return nil
}

// digest is the output digest of task t as it finishes in a live run.
func (s *Sim) digest(t *state.Task) string {
	wu := t.Name
	if i := strings.LastIndexByte(wu, '_'); i > 0 {
		wu = wu[:i]
	}
	app := ""
	if v, ok := s.avIndex[t.AppVersion]; ok {
		app = s.doc.AppVersions[v].App
	}
	for _, n := range s.live.Nondeterministic {
		// The draw is a hash of the run's seed and the result's name, so it does not
		// depend on the order in which tasks finish or on which program settles them.
		if n.App == app && unitHash(s.cfg.Seed, t.Name) < n.P {
			return digestOf("result:" + t.Name)
		}
	}
	return digestOf("workunit:" + wu)
}

func digestOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}

// unitHash is a number in [0, 1) drawn from seed and name.
func unitHash(seed uint64, name string) float64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h := sha256.Sum256(append(b[:], name...))
	return float64(binary.LittleEndian.Uint64(h[:8])>>11) / math.Exp2(53)
}
