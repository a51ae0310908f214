// Package localitysim owns blocality simulate: emulated hosts of varied speeds and
// churn drawing the jobs of one batch through the scheduler bserver serve runs
// (lib/server, in-process, no HTTP) on a temporary in-memory SQLite database, with
// the work generator, transitioner and locality daemon (lib/store) run on a simulated
// clock. It scores a policy by the data it sends: copies of each file sent to hosts,
// bytes sent, batch completion time and host idle time. The same run with one cursor
// is naive in-order dispatch, the baseline seed 004 sets out to beat.
package localitysim

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/locality"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store"
)

// Config is one simulated run.
type Config struct {
	Hosts      int     // hosts present at any time
	Files      int     // files in the batch
	Jobs       int     // jobs in the batch
	Redundancy int     // results per job (min_quorum = target_nresults)
	Spread     float64 // fastest ÷ slowest host speed (log-uniform in between)
	Churn      float64 // fraction of hosts that leave (and are replaced) per day
	JobHours   float64 // a job's run time on the median host, hours
	FileBytes  float64 // size of every file
	BufferMin  float64 // the client's work buffer: ask when below BufferMin days ...
	BufferMax  float64 // ... for enough to reach BufferMax days
	TeamSize   int     // hosts per team; 0 or >= Hosts: one cursor (in-order dispatch)
	// InOrder runs naive in-order dispatch (one cursor, no streams) with the unsent-job
	// pool of all of TeamSize's cursors together: the baseline for the same case.
	InOrder bool
	Cushion int // unsent jobs the generator keeps per cursor
	// StreamJobs is the per-host stream length (0: none, seed 004's plain job order;
	// docs/decisions.md). In-order dispatch never uses streams.
	StreamJobs int64
	Daemon     float64 // seconds between generator/transitioner passes
	Seed       uint64
	// Trace records every job sent (for --plot).
	Trace bool
}

// Default is the case of issue 12: 200 hosts over 10× speeds with 10 % churn a day,
// 5,000 files, 50,000 jobs, redundancy 2.
func Default() Config {
	return Config{Hosts: 200, Files: 5000, Jobs: 50000, Redundancy: 2, Spread: 10, Churn: 0.1, JobHours: 2,
		FileBytes: 16e6, BufferMin: 0.1, BufferMax: 0.6, TeamSize: locality.DefaultTeamSize, Cushion: 200, Daemon: 3600, Seed: 1,
		StreamJobs: locality.DefaultStreamJobs(50000, 5000)}
}

// Figures are a run's scores.
type Figures struct {
	Policy         string  `json:"policy"`
	Cursors        int     `json:"cursors"`
	BytesSent      float64 `json:"bytes_sent"`
	CopiesMean     float64 `json:"copies_per_file_mean"`
	CopiesP95      float64 `json:"copies_per_file_p95"`
	CopiesPerRed   float64 `json:"copies_per_file_over_redundancy"`
	CompletionDays float64 `json:"completion_days"`
	IdleFraction   float64 `json:"host_idle_fraction"`
	RPCs           int     `json:"rpcs"`
	HostsSeen      int     `json:"hosts_seen"`
	// Waste: copies of a file beyond the redundancy, by what the receiving host was
	// doing (see Waste).
	Waste Waste  `json:"extra_copies"`
	Trace []Sent `json:"-"`
}

// Waste splits the copies of files beyond the redundancy (a file sent to more hosts
// than it has results per job) by the host that received the extra copy: a host
// getting its first job of the batch (new, mostly churn), a host whose job is on
// another cursor than its previous one (moved), a host whose previous job was on the
// same cursor, and, of those, a file an earlier holder got through another cursor
// (boundary: jobs of two cursors use it), a file fewer than redundancy of whose earlier
// holders are still on the team (replace: they left, moved or are leaving), and the
// rest (team: one more member of a team sharing a file its holders are still on).
type Waste struct {
	New      int `json:"new_host"`
	Moved    int `json:"moved_host"`
	Boundary int `json:"cursor_boundary"`
	Replace  int `json:"replacing_holders"`
	Team     int `json:"same_team"`
}

// Sent is one job sent to a host: when, which host (its lane, in order of arrival),
// and the first file of the job.
type Sent struct {
	Time float64
	Host int
	File int64
}

// Check says what is wrong with a configuration, naming the flag.
func (c Config) Check() error {
	switch {
	case c.Hosts < 1:
		return fmt.Errorf("--hosts: must be >= 1, got %d", c.Hosts)
	case c.Files < 1:
		return fmt.Errorf("--files: must be >= 1, got %d", c.Files)
	case c.Jobs < 1:
		return fmt.Errorf("--jobs: must be >= 1, got %d", c.Jobs)
	case c.Redundancy < 1 || c.Redundancy > 10:
		return fmt.Errorf("--redundancy: must be 1 to 10, got %d", c.Redundancy)
	case !(c.Spread >= 1) || math.IsInf(c.Spread, 0):
		return fmt.Errorf("--spread: must be >= 1, got %v", c.Spread)
	case !(c.Churn >= 0 && c.Churn < 1):
		return fmt.Errorf("--churn: must be in [0, 1), got %v", c.Churn)
	case !(c.JobHours > 0) || math.IsInf(c.JobHours, 0):
		return fmt.Errorf("--job-hours: must be > 0, got %v", c.JobHours)
	case c.TeamSize < 0:
		return fmt.Errorf("--team-size: must be >= 0, got %d", c.TeamSize)
	case c.Cushion < 1:
		return fmt.Errorf("--cushion: must be >= 1, got %d", c.Cushion)
	case c.StreamJobs < 0:
		return fmt.Errorf("--stream-jobs: must be >= 0, got %d", c.StreamJobs)
	}
	return nil
}

const start = 1.7e9 // the simulated clock's origin, Unix seconds

// host is an emulated client.
type host struct {
	lane    int
	id      int64
	auth    string
	flops   float64
	queue   []job // queue[0] runs
	runEnd  float64
	done    []string // results finished, to report
	files   map[string]bool
	cursor  int     // index of the cursor of the last job sent (-1: none yet)
	leaveAt float64 // stops fetching from then on
	nextRPC float64
	gone    bool
	joined  float64 // presence: joined..left (or the end of the run)
	left    float64
	busy    float64 // seconds of jobs run to completion
}

type job struct {
	result string
	secs   float64
}

// event is a host's next wake-up.
type event struct {
	t    float64
	host *host
	seq  int
}

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	if e[i].t != e[j].t {
		return e[i].t < e[j].t
	}
	return e[i].seq < e[j].seq
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// Batch makes the run's batch: files of equal size and jobs over contiguous runs of 1
// to 3 files whose density along the file sequence varies (weights uniform in
// [0.25, 1.75), drawn from the seed).
func Batch(c Config) store.BatchSpec {
	r := rand.New(rand.NewPCG(c.Seed, 0xba7c4))
	spec := store.BatchSpec{Name: "sim", App: "sim", DelayBound: 14 * 86400, MinQuorum: c.Redundancy, TargetNResults: c.Redundancy,
		MaxErrorResults: 3, MaxTotalResults: 2*c.Redundancy + 2, MaxSuccessResults: 2 * c.Redundancy}
	for f := 0; f < c.Files; f++ {
		spec.Files = append(spec.Files, store.BatchFile{FileNum: int64(f), Name: "sim_f" + strconv.Itoa(f), URL: "http://data/sim_f" + strconv.Itoa(f), NBytes: c.FileBytes})
	}
	w := make([]float64, c.Files)
	total := 0.0
	for f := range w {
		w[f] = 0.25 + 1.5*r.Float64()
		total += w[f]
	}
	// Jobs start at file f in proportion to w[f].
	median := 1e9 * math.Sqrt(c.Spread)
	fpops := c.JobHours * 3600 * median
	acc, f := 0.0, 0
	for j := 0; j < c.Jobs; j++ {
		pos := (float64(j) + 0.5) / float64(c.Jobs) * total
		for f < c.Files-1 && acc+w[f] < pos {
			acc += w[f]
			f++
		}
		span := int64(1 + r.IntN(3))
		last := min(int64(f)+span-1, int64(c.Files-1))
		spec.Jobs = append(spec.Jobs, store.BatchJob{JobNum: int64(j), FirstFileNum: int64(f), LastFileNum: last, FpopsEst: fpops * float64(last-int64(f)+1) / 2})
	}
	return spec
}

// Run runs one policy on a fresh in-memory SQLite database.
func Run(ctx context.Context, c Config) (*Figures, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	// The database calls get a context that is never cancelled: with a cancellable
	// one, the SQLite driver runs every statement on a goroutine of its own and
	// database/sql watches every transaction (with blocality's signal context that
	// was a third of the run's CPU time). The event loop checks stop instead, so an
	// interrupt still ends the run within one event.
	stop := ctx
	ctx = context.WithoutCancel(ctx)
	// The database lives in memory and is thrown away after the run: commits write
	// no pages anywhere (writing them to a file, even on a tmpfs, was a tenth of the
	// run) and a crash loses nothing that matters; the scheduler's statements are
	// the same. The store keeps one connection for SQLite, open for the store's
	// life, so the database lasts the run (were the connection ever replaced, the
	// next statement would find no tables and the run would fail, not go on).
	st, err := store.Open("sqlite::memory:")
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err := st.TempInMemory(ctx); err != nil {
		return nil, err
	}
	if _, err := st.Migrate(ctx, start); err != nil {
		return nil, err
	}
	if _, err := st.AddApp(ctx, "sim", true, start); err != nil {
		return nil, err
	}
	if _, err := st.AddAppVersion(ctx, store.AppVersion{AppName: "sim", VersionNum: 1, AvgNCPUs: 1}, start); err != nil {
		return nil, err
	}
	srv := &server.Server{Store: st}
	r := rand.New(rand.NewPCG(c.Seed, 0x5eed))
	now := float64(start)
	fig := &Figures{Policy: "locality", Trace: nil}
	var hosts []*host
	// Some volunteers run two hosts, which the team rules keep apart: a host is
	// attached with its volunteer's account key (the scheduler requires one), the
	// second host of a volunteer with the key of the first.
	var key string
	newHost := func() (*host, error) {
		h := &host{lane: len(hosts), flops: 1e9 * math.Pow(c.Spread, r.Float64()), files: map[string]bool{}, joined: now, cursor: -1}
		if key == "" {
			u, err := st.AddUser(ctx, fmt.Sprintf("volunteer %d", len(hosts)+1), "", now)
			if err != nil {
				return nil, err
			}
			key = u.Authenticator
		}
		h.auth = key
		if r.Float64() >= 0.2 {
			key = "" // the next host is another volunteer's
		}
		if c.Churn > 0 {
			h.leaveAt = now + r.ExpFloat64()*86400/c.Churn
		} else {
			h.leaveAt = math.Inf(1)
		}
		rep, err := srv.Handle(ctx, &boincxml.SchedulerRequest{Authenticator: h.auth, HostInfo: boincxml.HostInfo{PNCPUs: 1, PFpops: h.flops}}, now, "http://sim/")
		if err != nil {
			return nil, err
		}
		h.id = rep.HostID
		hosts = append(hosts, h)
		return h, err
	}
	q := &events{}
	seq := 0
	wake := func(h *host, t float64) {
		seq++
		heap.Push(q, event{t: t, host: h, seq: seq})
	}
	for range c.Hosts {
		h, err := newHost()
		if err != nil {
			return nil, err
		}
		wake(h, now)
	}

	spec := Batch(c)
	credit := make([]float64, len(spec.Jobs))
	for i, j := range spec.Jobs {
		credit[i] = j.FpopsEst * locality.CreditPerFlop
	}
	teamSize := c.TeamSize
	if teamSize == 0 || teamSize >= c.Hosts {
		teamSize = c.Hosts
	}
	// Each cursor's cushion: --cushion, and with streams at least two streams for each
	// pair of the team and two more. The generator counts a job unsent while one of its
	// results is, so each pair's trail (the second results behind its leader) takes up
	// to a stream of the cushion; the fresh streams a host looking for one needs come
	// on top (with one stream per pair and one more, the full case gave 1.518 copies
	// per file per result; with this, 1.499).
	perCursor := c.Cushion
	if c.StreamJobs > 0 {
		perCursor = max(perCursor, int(c.StreamJobs)*2*((teamSize+c.Redundancy-1)/c.Redundancy+1))
	}
	spec.Cursors = locality.PlanCursors(credit, c.Hosts, teamSize)
	spec.StreamJobs = c.StreamJobs
	cushion := perCursor
	if c.InOrder || len(spec.Cursors) == 1 {
		// One cursor, plain job order, and the same pool of unsent jobs as all the
		// teams' cushions together.
		fig.Policy = "in-order"
		cushion = perCursor * len(spec.Cursors)
		spec.Cursors = []locality.Range{{First: 0, Last: int64(len(spec.Jobs) - 1)}}
		spec.StreamJobs = 0
	}
	fig.Cursors = len(spec.Cursors)
	if _, err := st.CreateBatch(ctx, spec, now); err != nil {
		return nil, err
	}
	status, err := st.BatchStatuses(ctx, []string{spec.Name})
	if err != nil {
		return nil, err
	}
	cursorIDs := make([]int64, len(status[0].Cursors)) // by index in spec.Cursors
	for i, cs := range status[0].Cursors {
		cursorIDs[i] = cs.ID
	}
	// The cursors that had jobs sent (the generator's work) and results reported (the
	// transitioner's) since the daemons' last pass: the others have nothing to do, and
	// passing over them was most of a run's time. nil: all, for the first pass.
	var sentTo, reportedTo map[int64]bool
	copies := map[string]int{}
	type holder struct {
		h      *host
		cursor int // through which the file reached h
	}
	holders := map[string][]holder{}
	cursorOf := func(job int64) int {
		i, _ := slices.BinarySearchFunc(spec.Cursors, job, func(r locality.Range, j int64) int {
			switch {
			case r.Last < j:
				return -1
			case r.First > j:
				return 1
			}
			return 0
		})
		return i
	}
	daemons := func() (bool, error) {
		if _, err := st.GenerateCursors(ctx, cushion, now, sentTo); err != nil {
			return false, err
		}
		if _, done, err := st.TransitionCursors(ctx, now, reportedTo); err != nil || done > 0 {
			return done > 0, err
		}
		sentTo, reportedTo = map[int64]bool{}, map[int64]bool{}
		_, err := st.Credit(ctx, 86400, now)
		return false, err
	}
	if _, err := daemons(); err != nil {
		return nil, err
	}
	nextDaemon := now + c.Daemon
	horizon := now + 3650*86400
	for q.Len() > 0 {
		if err := stop.Err(); err != nil {
			return nil, err
		}
		ev := heap.Pop(q).(event)
		for ev.t >= nextDaemon {
			now = nextDaemon
			done, err := daemons()
			if err != nil {
				return nil, err
			}
			if done {
				fig.CompletionDays = (now - start) / 86400
				goto end
			}
			nextDaemon += c.Daemon
		}
		if ev.t > horizon {
			return nil, fmt.Errorf("the batch did not complete in %g days", (horizon-start)/86400)
		}
		now = ev.t
		h := ev.host
		if h.gone {
			continue
		}
		// The running job finishes.
		if len(h.queue) > 0 && now >= h.runEnd {
			h.done = append(h.done, h.queue[0].result)
			h.busy += h.queue[0].secs
			h.queue = h.queue[1:]
			if len(h.queue) > 0 {
				h.runEnd = now + h.queue[0].secs
			}
		}
		queued := 0.0
		for i, j := range h.queue {
			if i == 0 {
				queued += h.runEnd - now
			} else {
				queued += j.secs
			}
		}
		leaving := now >= h.leaveAt
		wantWork := !leaving && queued < c.BufferMin*86400
		if (wantWork && now >= h.nextRPC) || (leaving && len(h.queue) == 0) || (len(h.done) > 0 && len(h.queue) == 0) {
			req := &boincxml.SchedulerRequest{HostID: h.id, Authenticator: h.auth, HostInfo: boincxml.HostInfo{PNCPUs: 1, PFpops: h.flops}}
			if wantWork {
				secs := c.BufferMax*86400 - queued
				req.WorkReqSeconds, req.CPUReqSecs = secs, secs
				if len(h.queue) == 0 {
					req.CPUReqInstances = 1
				}
			}
			for _, d := range h.done {
				req.Results = append(req.Results, boincxml.ReportedResult{Name: d, State: boincxml.ResultFilesUploaded})
				// Result names are BATCH_jJOB_K.
				num, err := strconv.ParseInt(d[len(spec.Name)+2:strings.LastIndexByte(d, '_')], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("result %q: %v", d, err)
				}
				if reportedTo != nil {
					reportedTo[cursorIDs[cursorOf(num)]] = true
				}
			}
			rep, err := srv.Handle(ctx, req, now, "http://sim/")
			if err != nil {
				return nil, fmt.Errorf("host %d at day %.2f: %w", h.id, (now-start)/86400, err)
			}
			fig.RPCs++
			h.done = h.done[:0]
			wus := map[string]boincxml.ReplyWorkunit{}
			for _, wu := range rep.Workunits {
				wus[wu.Name] = wu
				num, err := strconv.ParseInt(wu.Name[len(spec.Name)+2:], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("workunit %q: %v", wu.Name, err)
				}
				cur := cursorOf(num)
				if sentTo != nil {
					sentTo[cursorIDs[cur]] = true
				}
				for _, ref := range wu.FileRefs {
					if h.files[ref.FileName] {
						continue
					}
					h.files[ref.FileName] = true
					copies[ref.FileName]++
					fig.BytesSent += c.FileBytes
					if copies[ref.FileName] > c.Redundancy {
						switch {
						case h.cursor < 0:
							fig.Waste.New++
						case h.cursor != cur:
							fig.Waste.Moved++
						case slices.ContainsFunc(holders[ref.FileName], func(o holder) bool { return o.cursor != cur }):
							fig.Waste.Boundary++
						default:
							staying := 0
							for _, o := range holders[ref.FileName] {
								if !o.h.gone && o.h.cursor == cur && now < o.h.leaveAt {
									staying++
								}
							}
							if staying < c.Redundancy {
								fig.Waste.Replace++
							} else {
								fig.Waste.Team++
							}
						}
					}
					holders[ref.FileName] = append(holders[ref.FileName], holder{h, cur})
				}
				h.cursor = cur
			}
			for _, res := range rep.ResultsSent {
				wu := wus[res.WUName]
				h.queue = append(h.queue, job{result: res.Name, secs: wu.RscFpopsEst / h.flops})
				if c.Trace && len(wu.FileRefs) > 0 {
					n, _ := strconv.ParseInt(wu.FileRefs[0].FileName[len("sim_f"):], 10, 64)
					fig.Trace = append(fig.Trace, Sent{Time: (now - start) / 86400, Host: h.lane, File: n})
				}
			}
			if len(rep.ResultsSent) > 0 && len(h.queue) == len(rep.ResultsSent) {
				h.runEnd = now + h.queue[0].secs // was idle: starts now
			}
			if wantWork && len(rep.ResultsSent) == 0 {
				h.nextRPC = now + 3600 // nothing to send: ask again in an hour
			} else {
				h.nextRPC = now
			}
		}
		if leaving && len(h.queue) == 0 && len(h.done) == 0 {
			h.gone, h.left = true, now
			nh, err := newHost()
			if err != nil {
				return nil, err
			}
			wake(nh, now)
			continue
		}
		// Next wake-up: the running job's end, or the next time to ask for work.
		next := math.Inf(1)
		if len(h.queue) > 0 {
			next = h.runEnd
		}
		if !leaving && (queued < c.BufferMin*86400 || len(h.queue) == 0) {
			next = min(next, max(h.nextRPC, now+1))
		} else if len(h.queue) > 0 {
			// The buffer falls below the low-water mark while jobs run.
			low := now + queued - c.BufferMin*86400
			if low > now {
				next = min(next, low)
			}
		}
		if leaving && len(h.queue) == 0 {
			next = now + 1
		}
		wake(h, next)
	}
	return nil, fmt.Errorf("the emulation ran out of events before the batch completed")
end:
	var busy, present float64
	for _, h := range hosts {
		left := h.left
		if !h.gone {
			left = now
			if len(h.queue) > 0 {
				busy += max(0, now-(h.runEnd-h.queue[0].secs))
			}
		}
		busy += h.busy
		present += left - h.joined
	}
	fig.IdleFraction = 1 - busy/present
	fig.HostsSeen = len(hosts)
	var cs []float64
	for _, f := range spec.Files {
		cs = append(cs, float64(copies[f.Name]))
	}
	slices.Sort(cs)
	sum := 0.0
	for _, v := range cs {
		sum += v
	}
	fig.CopiesMean = sum / float64(len(cs))
	fig.CopiesP95 = cs[int(math.Ceil(0.95*float64(len(cs))))-1]
	fig.CopiesPerRed = fig.CopiesMean / float64(c.Redundancy)
	return fig, nil
}
