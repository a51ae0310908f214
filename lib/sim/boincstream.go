package sim

import (
	"github.com/bkit/bkit/lib/glibcrand"
	"github.com/bkit/bkit/lib/scenario"
)

// BOINC's random stream under --emulate boinc.
//
// BOINC's client emulator calls srand(1) as it starts (client/sim.cpp main) and draws
// every random number from that one rand() stream (lib/util.h drand, lib/util.cpp
// rand_normal). Under --emulate boinc bsim's seed N is srand(N) (glibcrand) and the same
// draws are made at the same moments in the same order, so that where the policies
// decide alike, bsim's run follows BOINC's emulator's trajectory:
//
//   - reading the scenario (boincProcesses): the host's four processes at the end of
//     <time_stats> (on, connected, active, gpu_active), then each project's <available>
//     in the file's order (RANDOM_PROCESS::init: two draws each);
//   - each step (Sim.sample): on, active, gpu_active, connected, as sampled
//     (onOff.sampleBOINC: a draw only when a process flips);
//   - each RPC (Serve): the project's server process (onOff.askedAt); when it is down,
//     BOINC's client's backoff (server.boincBackoff: calculate_exponential_backoff, one
//     draw); when it is up, per job the app (server.pickApp, choose_app: one draw) and the
//     estimate (server.estimate, NORMAL_DIST::sample: rand_normal, two draws every second
//     job, shared by every app of every project), then BOINC's client's resource backoffs
//     (work_fetch.cpp RSC_PROJECT_WORK_FETCH::resource_backoff, one draw per resource
//     backed off, in resource order: boincPolicy.Replied).
//
// bkit's own clients (seed, goals, rr) draw their decisions' jitter (seed 000's backoff,
// seed 002's) from the decisions' PCG stream as elsewhere: BOINC's emulator has no such
// draw, and their RPCs already differ from its client's.

// boincProcesses makes the host's availability processes and the project servers'
// (s.serverUp) from the run's one stream, in the order BOINC's emulator makes them while
// it reads client_state.xml (sc.BOINCParseOrder): the host's four at </time_stats>,
// each server's at its project's <available>, a culled project's too (its two draws are
// made and the process dropped). A file without <time_stats> leaves the host always on
// with nothing drawn, as RANDOM_PROCESS's default frac of 1 does. A project without a
// server is always up and draws nothing, as in BOINC's emulator.
func (s *Sim) boincProcesses(sc *scenario.Scenario, on, active, gpuActive, connected float64) error {
	cfg := s.cfg
	s.g = glibcrand.New(uint32(cfg.Seed))
	ts := s.doc.Host.TimeStats
	for _, c := range []struct {
		name         string
		frac, lambda float64
	}{{"on", ts.OnFrac, on}, {"active", ts.ActiveFrac, active}, {"gpu_active", ts.GPUActiveFrac, gpuActive}, {"connected", ts.ConnectedFrac, connected}} {
		if err := checkProcess(c.name, c.frac, c.lambda, cfg.Duration); err != nil {
			return err
		}
	}
	order := sc.BOINCParseOrder()
	always := func(lambda float64) *onOff { return &onOff{frac: 1, lambda: lambda, on: true, g: s.g} }
	s.on, s.connected, s.active, s.gpuActive = always(on), always(connected), always(active), always(gpuActive)
	s.serverUp = make([]*onOff, len(s.doc.Projects))
	for _, name := range order {
		if name == "" { // CLIENT_TIME_STATS::parse's order
			s.on = newBOINCProcess(ts.OnFrac, on, s.g)
			s.connected = newBOINCProcess(ts.ConnectedFrac, connected, s.g)
			s.active = newBOINCProcess(ts.ActiveFrac, active, s.g)
			s.gpuActive = newBOINCProcess(ts.GPUActiveFrac, gpuActive, s.g)
			continue
		}
		p := -1
		for i := range s.doc.Projects {
			if s.doc.Projects[i].Name == name {
				p = i
			}
		}
		if p < 0 || !hasServer(sc, name) { // culled after BOINC's emulator drew for it
			newBOINCProcess(1, scenario.DefaultLambda, s.g)
			continue
		}
		frac, lambda := sc.ServerAvailability(name)
		if err := checkProcess("project "+name+" server", frac, lambda, cfg.Duration); err != nil {
			return err
		}
		s.serverUp[p] = newBOINCProcess(frac, lambda, s.g)
	}
	for p := range s.serverUp {
		if s.serverUp[p] == nil {
			s.serverUp[p] = always(scenario.DefaultLambda)
		}
		s.serverUp[p].atRPC = true
	}
	return nil
}

func hasServer(sc *scenario.Scenario, project string) bool {
	for _, sv := range sc.Servers {
		if sv.Project == project {
			return true
		}
	}
	return false
}

// boincStreamUser is a policy that draws from BOINC's stream under --emulate boinc
// (boincPolicy: its resource backoffs).
type boincStreamUser interface {
	useBOINCStream(g *glibcrand.Rand)
}

// shareBOINCStream gives the policy the run's stream when it draws from it.
func (s *Sim) shareBOINCStream() {
	if u, ok := s.policy.(boincStreamUser); ok && s.g != nil {
		u.useBOINCStream(s.g)
	}
}
