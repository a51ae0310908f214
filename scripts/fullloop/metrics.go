package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// rpcFigures are a front end's scheduler requests as its /metrics counted them
// (issue 31: the loop reads the servers' own figures, not their log lines): each
// process's last scrape, added over the processes a front end ran (a killed one is
// scraped just before its SIGKILL, when no client is in a request).
type rpcFigures struct {
	answered, refused float64
	// bounds are the latency histogram's upper bounds (seconds) and counts its
	// cumulative counts, +Inf last.
	bounds []float64
	counts []float64
}

// scrape reads f's /metrics and adds its scheduler figures to f.rpc.
func (f *frontEnd) scrape() error {
	if f.url == "" || f.cmd == nil {
		return nil // not running: a killed process was read before its kill
	}
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(f.url + "metrics")
	if err != nil {
		return fmt.Errorf("%smetrics: %w", f.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%smetrics: %s", f.url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return fmt.Errorf("%smetrics: %w", f.url, err)
	}
	if fam := mf["bkit_scheduler_rpcs_total"]; fam != nil {
		for _, m := range fam.Metric {
			outcome := ""
			for _, l := range m.Label {
				if l.GetName() == "outcome" {
					outcome = l.GetValue()
				}
			}
			if outcome == "ok" {
				f.rpc.answered += m.GetCounter().GetValue()
			} else {
				f.rpc.refused += m.GetCounter().GetValue()
			}
		}
	}
	if fam := mf["bkit_scheduler_rpc_duration_seconds"]; fam != nil && len(fam.Metric) == 1 {
		f.rpc.addHistogram(fam.Metric[0].GetHistogram())
	}
	return nil
}

func (r *rpcFigures) addHistogram(h *dto.Histogram) {
	if r.bounds == nil {
		for _, b := range h.Bucket {
			r.bounds = append(r.bounds, b.GetUpperBound())
		}
		r.bounds = append(r.bounds, math.Inf(1))
		r.counts = make([]float64, len(r.bounds))
	}
	for i, b := range h.Bucket {
		if i < len(r.counts)-1 {
			r.counts[i] += float64(b.GetCumulativeCount())
		}
	}
	r.counts[len(r.counts)-1] += float64(h.GetSampleCount())
}

// add adds o's figures to r (the front ends of the loop together).
func (r *rpcFigures) add(o rpcFigures) {
	r.answered += o.answered
	r.refused += o.refused
	if o.bounds == nil {
		return
	}
	if r.bounds == nil {
		r.bounds = o.bounds
		r.counts = make([]float64, len(o.counts))
	}
	for i := range o.counts {
		r.counts[i] += o.counts[i]
	}
}

// quantile estimates the q-quantile of the latency in milliseconds from the
// histogram as Prometheus' histogram_quantile does: linear within the bucket that
// holds it (from 0 for the first); the last finite bound when it falls in +Inf.
func (r *rpcFigures) quantile(q float64) float64 {
	if len(r.counts) == 0 || r.counts[len(r.counts)-1] == 0 {
		return 0
	}
	rank := q * r.counts[len(r.counts)-1]
	i := sort.Search(len(r.counts), func(i int) bool { return r.counts[i] >= rank })
	if i == len(r.bounds)-1 {
		return r.bounds[len(r.bounds)-2] * 1000
	}
	lo, below := 0.0, 0.0
	if i > 0 {
		lo, below = r.bounds[i-1], r.counts[i-1]
	}
	in := r.counts[i] - below
	if in == 0 {
		return r.bounds[i] * 1000
	}
	return (lo + (r.bounds[i]-lo)*(rank-below)/in) * 1000
}

// snapshotStatus saves each project's status page as its first front end serves it,
// into dir: status-P.html and status-P.json, and status-A.png when Debian's chromium
// is there to take the picture.
func (l *loop) snapshotStatus(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	seen := map[string]bool{}
	c := &http.Client{Timeout: 30 * time.Second}
	for _, f := range l.fronts {
		if seen[f.project] || f.url == "" {
			continue
		}
		seen[f.project] = true
		for _, page := range []struct{ path, file string }{{"status", "status-" + f.project + ".html"}, {"status.json", "status-" + f.project + ".json"}} {
			resp, err := c.Get(f.url + page.path)
			if err != nil {
				return err
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s%s: %s", f.url, page.path, resp.Status)
			}
			if err := os.WriteFile(filepath.Join(dir, page.file), b, 0o644); err != nil {
				return err
			}
		}
		if f.project != "A" {
			continue // a picture of one page is enough; chromium takes seconds to start
		}
		bin, err := exec.LookPath("chromium")
		if err != nil {
			l.progress("no chromium: the status pages are in %s as HTML only", dir)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		profile, err := os.MkdirTemp(l.dir, "chromium-")
		if err != nil {
			cancel()
			return err
		}
		png := filepath.Join(dir, "status-"+f.project+".png")
		out, err := exec.CommandContext(cctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
			"--user-data-dir="+profile, "--hide-scrollbars", "--window-size=1000,1400", "--screenshot="+png, f.url+"status").CombinedOutput()
		cancel()
		os.RemoveAll(profile)
		if err != nil {
			return fmt.Errorf("chromium screenshot of %sstatus: %v: %s", f.url, err, out)
		}
	}
	l.progress("status pages in %s: status-A.html, status-B.html (and .json; status-A.png)", dir)
	return nil
}
