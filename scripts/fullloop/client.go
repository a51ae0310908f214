package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/state"
	"github.com/bkit/bkit/lib/store"
)

// client is one emulated host: a state document and a live world (bsim init --live).
type client struct {
	name  string
	kind  kind
	seed  uint64
	doc   string // its state document
	world string // its bsim world
	// The offline client is off from offFrom to offUntil (simulated), and loses its
	// work when it goes off.
	offFrom, offUntil float64
	lost              []state.Task // the results it lost
	wiped             bool
	// resent are the lost results the server sent the client again after it came
	// back (BOINC's resend of lost results; docs/bserver.md): they may end reported.
	resent map[string]bool
	seen   map[string]bool
	// keyA, keyB: the client's account keys at projects A and B.
	keyA, keyB string
	on         bool // this step: the host computes
	online     bool // this step: the host computes and is connected
	index      int  // its place among the clients
	// uploaded are the finished tasks whose output file the driver uploaded, or the
	// server refused for good (upload.go).
	uploaded map[string]bool
}

// makeClients writes each client's scenario (a state document attached to project A,
// and B for the two-projects kind) and starts its live world with bsim init.
func (l *loop) makeClients(ctx context.Context) error {
	for i := range l.cfg.Clients {
		k := kinds[i%len(kinds)]
		c := &client{name: fmt.Sprintf("c%02d-%s", i+1, k.name), kind: k, seed: l.cfg.Seed*1000 + uint64(i) + 1, seen: map[string]bool{}, resent: map[string]bool{},
			index: i, uploaded: map[string]bool{}}
		dir := filepath.Join(l.dir, c.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		c.doc, c.world = filepath.Join(dir, "state.json"), filepath.Join(dir, "world.json")
		if k.offline {
			// Off from a fifth of the run for longer than a deadline, so its results
			// are lost, marked so by bretry and sent to others, while the run goes on.
			c.offFrom = start + l.cfg.Duration/5
			c.offUntil = c.offFrom + max(l.cfg.Duration/2, delayBound+2*l.cfg.Delta)
		}
		// Each client is its own volunteer, with an account at each of its projects
		// (bserver serve requires one; the locality teams keep one volunteer's hosts
		// apart, so the clients must not share one).
		for _, p := range []struct {
			db  *store.Store
			key *string
			on  bool
		}{{l.dbA, &c.keyA, true}, {l.dbB, &c.keyB, k.twoProjects}} {
			if !p.on {
				continue
			}
			u, err := p.db.AddUser(ctx, c.name, "", start)
			if err != nil {
				return err
			}
			*p.key = u.Authenticator
		}
		scenario := filepath.Join(dir, "scenario.yaml")
		if err := os.WriteFile(scenario, []byte(l.scenario(c, i)), 0o644); err != nil {
			return err
		}
		out, err := l.exec(ctx, "bsim", "init", scenario, "--world", c.world, "--live", "--nondeterministic", fmt.Sprintf("nd=%g", ndProb),
			"--duration", exactTime(l.cfg.Duration), "--delta", exactTime(l.cfg.Delta), "--seed", strconv.FormatUint(c.seed, 10))
		if err != nil {
			return err
		}
		if err := cliutil.WriteFileAtomic(c.doc, []byte(out)); err != nil {
			return err
		}
		l.clients = append(l.clients, c)
	}
	return nil
}

// scenario is client c's bkit scenario file for a live run: its host, small work
// buffers, and its projects with their scheduler URLs (A's front ends in turn, so two
// front ends share the clients) and the app versions its host can run. A project is
// assumed to have jobs for each of the host's resources until a reply says otherwise
// (seed 002's D flags), and the client holds the project's app versions from the
// start (docs/decisions.md, full loop): brpc poll asks a project only for resources it
// has an app version for.
func (l *loop) scenario(c *client, i int) string {
	k := c.kind
	var b strings.Builder
	b.WriteString("version: 1\nstate:\n  version: 1\n  host:\n    resources:\n")
	fmt.Fprintf(&b, "      - {type: cpu, instances: %d, flops: %g}\n", k.cpus, k.flops)
	rsc := "[{type: cpu, accumulate_debt: true}]"
	if k.gpu > 0 {
		fmt.Fprintf(&b, "      - {type: NVIDIA, instances: 1, flops: %g}\n", k.gpu)
		rsc = "[{type: cpu, accumulate_debt: true}, {type: NVIDIA, accumulate_debt: true}]"
	}
	b.WriteString("  preferences: {work_buf_min_days: 0.01, work_buf_additional_days: 0.02, connection_period_days: 0.01, cpu_scheduling_period: 3600}\n")
	var urls []string
	for j := range l.urlsA {
		urls = append(urls, fmt.Sprintf("%q", l.urlsA[(i+j)%len(l.urlsA)]))
	}
	fmt.Fprintf(&b, "  projects:\n    - {name: A, master_url: %q, scheduler_urls: [%s], resource_share: 100, authenticator: %s, resources: %s}\n",
		strings.TrimSuffix(l.urlsA[i%len(l.urlsA)], "scheduler"), strings.Join(urls, ", "), c.keyA, rsc)
	if k.twoProjects {
		fmt.Fprintf(&b, "    - {name: B, master_url: %q, scheduler_urls: [%q], resource_share: 300, authenticator: %s, resources: [{type: cpu, accumulate_debt: true}]}\n",
			strings.TrimSuffix(l.urlB, "scheduler"), l.urlB, c.keyB)
	}
	b.WriteString("  apps:\n")
	for _, a := range []string{"cpu", "nd", "loc"} {
		fmt.Fprintf(&b, "    - {name: %s, project: A}\n", a)
	}
	if k.gpu > 0 {
		b.WriteString("    - {name: gpu, project: A}\n")
	}
	if k.twoProjects {
		b.WriteString("    - {name: bcpu, project: B}\n")
	}
	b.WriteString("  app_versions:\n")
	for _, a := range []string{"cpu", "nd", "loc"} {
		fmt.Fprintf(&b, "    - {name: A/%s/1, project: A, app: %s, version_num: 1, avg_ncpus: 1}\n", a, a)
	}
	if k.gpu > 0 {
		b.WriteString("    - {name: A/gpu/1/cuda, project: A, app: gpu, version_num: 1, plan_class: cuda, avg_ncpus: 0.2, coproc: {type: NVIDIA, count: 1}}\n")
	}
	if k.twoProjects {
		b.WriteString("    - {name: B/bcpu/1, project: B, app: bcpu, version_num: 1, avg_ncpus: 1}\n")
	}
	b.WriteString("  tasks: []\n")
	return b.String()
}

// A client's step is the chain of client-loop.sh against live servers, in three
// parts so that the clients' sessions reach the servers one at a time, in the
// clients' order, whatever the processors do (the same seed then gives the same run:
// which client gets which job does not depend on which process the machine runs
// first):
//
//	prepare (clients at once):   bsim clock (the step's time and the host's
//	                             availability); if on and connected: bfetch,
//	                             bdevices request (seeds 001 and 002), brpc poll
//	                             -o project (seed 000: whom to contact, if anyone)
//	session (one at a time):     brpc session, the RPCs over HTTP: reports, jobs,
//	                             backoff
//	compute (clients at once):   if on: bsched --if-due, bsim settle, bsched --if-due
//	                             (if tasks finished); bsim advance (the tasks
//	                             compute; the clock moves on)
//
// The offline client, while off, only lets its clock move on (bsim advance): it runs
// nothing and contacts no one, and it lost its work when it went off.

// prepare is the first part of the step; it reports whether the client has a
// session to run.
func (c *client) prepare(ctx context.Context, l *loop) (bool, error) {
	c.on, c.online = false, false
	out, err := l.exec(ctx, "bsim", "clock", "--world", c.world)
	if err != nil {
		return false, err
	}
	f := strings.Fields(out)
	if len(f) != 5 {
		return false, fmt.Errorf("%s: bsim clock printed %q", c.name, out)
	}
	now, err := strconv.ParseFloat(f[0], 64)
	if err != nil || now != l.now {
		return false, fmt.Errorf("%s: bsim clock says %q, the loop's clock is %s", c.name, f[0], exactTime(l.now))
	}
	st := c.stateArgs(now)
	on, connected := f[1] == "1", f[4] == "1"
	if c.offUntil > 0 && now >= c.offFrom && now < c.offUntil {
		if !c.wiped {
			// It goes off at the first step it holds work (there is something to
			// lose), an hour after offFrom at the latest.
			held, err := c.held(l)
			if err != nil {
				return false, err
			}
			if held > 0 || now >= c.offFrom+3600 {
				c.offUntil += now - c.offFrom
				if err := c.wipe(l); err != nil {
					return false, err
				}
			}
		}
		on = on && !c.wiped
	}
	c.on, c.online = on, on && connected
	if !c.online {
		return false, nil
	}
	if _, err := l.exec(ctx, "bfetch", st...); err != nil {
		return false, err
	}
	if _, err := l.exec(ctx, "bdevices", append([]string{"request"}, st...)...); err != nil {
		return false, err
	}
	p, err := l.exec(ctx, "brpc", append([]string{"poll", "-o", "project"}, st...)...)
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(p) != "", nil
}

// session is the second part: the session brpc poll planned, and what it did.
func (c *client) session(ctx context.Context, l *loop) error {
	seed := strconv.FormatUint(c.seed*1_000_003+uint64((l.now-start)/l.cfg.Delta), 10)
	if _, err := l.exec(ctx, "brpc", append([]string{"session", "--seed", seed, "--connect-timeout", "5s", "--timeout", "30s"}, c.stateArgs(l.now)...)...); err != nil {
		return err
	}
	return c.observe(ctx, l)
}

// compute is the third part: the client's processors over the step.
func (c *client) compute(ctx context.Context, l *loop) error {
	st := c.stateArgs(l.now)
	if c.on {
		if _, err := l.exec(ctx, "bsched", append([]string{"--if-due"}, st...)...); err != nil {
			return err
		}
		n, err := l.exec(ctx, "bsim", append([]string{"settle", "--world", c.world}, st...)...)
		if err != nil {
			return err
		}
		if strings.TrimSpace(n) != "0" {
			if _, err := l.exec(ctx, "bsched", append([]string{"--if-due"}, st...)...); err != nil {
				return err
			}
		}
	}
	if _, err := l.exec(ctx, "bsim", append([]string{"advance", "--world", c.world}, st...)...); err != nil {
		return err
	}
	_, err := c.read(l)
	return err
}

func (c *client) stateArgs(now float64) []string {
	return []string{"--now", exactTime(now), "--state", c.doc, "--in-place"}
}

// read decodes the client's document strictly (and so validates it): every document
// must be valid after every step; one that is not breaks an invariant and stops the
// loop.
func (c *client) read(l *loop) (*state.Document, error) {
	data, err := os.ReadFile(c.doc)
	if err != nil {
		return nil, err
	}
	doc, _, err := state.Decode(data, c.doc)
	if err != nil {
		l.breakf("%s: state document invalid at %s: %v", c.name, human(l.now-start), err)
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	return doc, nil
}

// observe records what a session did: the results received (none may have been sent
// to anyone before) and the reports a front end acknowledged, marking those of
// results the project's database no longer holds (purged before the report came:
// the front end acknowledges them, as BOINC's scheduler does, so that the client
// stops sending them; docs/decisions.md).
func (c *client) observe(ctx context.Context, l *loop) error {
	doc, err := c.read(l)
	if err != nil {
		return err
	}
	purged := map[string]bool{}
	for _, t := range doc.Tasks {
		l.mu.Lock()
		_, known := l.acked[t.Name]
		l.mu.Unlock()
		if t.State != state.TaskReported || known {
			continue
		}
		db := l.dbA
		if t.Project == "B" {
			db = l.dbB
		}
		n, err := count(ctx, db, `SELECT COUNT(*) FROM result WHERE name = ?`, t.Name)
		if err != nil {
			return err
		}
		purged[t.Name] = n == 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range doc.Tasks {
		if c.wiped && slices.ContainsFunc(c.lost, func(lt state.Task) bool { return lt.Name == t.Name }) {
			c.resent[t.Name] = true
		}
		if !c.seen[t.Name] {
			c.seen[t.Name] = true
			if who, ok := l.received[t.Name]; ok && len(l.broken) < 100 {
				l.broken = append(l.broken, fmt.Sprintf("result %s sent twice: to %s, then to %s", t.Name, who, c.name))
			} else {
				l.received[t.Name] = c.name
			}
		}
		if _, known := l.acked[t.Name]; t.State == state.TaskReported && !known {
			l.acked[t.Name] = ack{client: c.name, project: t.Project, purged: purged[t.Name], at: l.now}
		}
	}
	return nil
}

// held is how many results the client holds unreported.
func (c *client) held(l *loop) (int, error) {
	doc, err := c.read(l)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range doc.Tasks {
		if t.State != state.TaskReported {
			n++
		}
	}
	return n, nil
}

// wipe is the offline client losing its work: its tasks are gone from its document
// (a disk that failed, a reinstall that kept the account). It is the one change the
// driver makes to a document; the programs notice it (bsim forgets the jobs).
func (c *client) wipe(l *loop) error {
	doc, err := c.read(l)
	if err != nil {
		return err
	}
	for _, t := range doc.Tasks {
		if t.State != state.TaskReported {
			c.lost = append(c.lost, t)
		}
	}
	doc.Tasks = []state.Task{}
	doc.RPCSession = nil
	data, err := state.Encode(doc, state.JSON)
	if err != nil {
		return err
	}
	if err := cliutil.WriteFileAtomic(c.doc, data); err != nil {
		return err
	}
	c.wiped = true
	l.progress("%s: %s goes offline until %s and loses its %d tasks", human(l.now-start), c.name, human(c.offUntil-start), len(c.lost))
	return nil
}
