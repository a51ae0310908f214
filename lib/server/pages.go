package server

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/credit"
	"github.com/bkit/bkit/lib/store"
)

// handlePages adds what an operator and volunteers read (issue 31) to mux: /metrics,
// the status page in its forms, and the volunteers' pages under BOINC's names (a
// user's page, top users, top hosts), each unless its Config switch turns it off.
func (s *Server) handlePages(mux *http.ServeMux) {
	if !s.Config.NoMetrics {
		mux.HandleFunc("/metrics", s.serveMetrics)
	}
	if s.Config.NoPages {
		return
	}
	mux.HandleFunc("/status", s.serveStatus)
	mux.HandleFunc("/server_status.php", s.serveStatus)
	mux.HandleFunc("/status.json", s.serveStatusJSON)
	mux.HandleFunc("/show_user.php", s.serveUser)
	mux.HandleFunc("/top_users.php", s.serveTopUsers)
	mux.HandleFunc("/top_hosts.php", s.serveTopHosts)
}

// pageFuncs format numbers and times the way the pages show them.
var pageFuncs = map[string]any{
	"credit": formatCredit,
	"date":   func(t float64) string { return unixTime(t).Format("2 Jan 2006") },
}

// formatCredit writes a credit with two decimals and thousands separators, as BOINC's
// pages do (format_credit).
func formatCredit(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	s := strconv.FormatFloat(math.Abs(v), 'f', 2, 64)
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, c := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String() + "." + frac
}

// recentAverage is BOINC's "recent average credit": the stored average decayed to now
// (it is brought up to date only when credit is granted).
func recentAverage(avg, avgTime, now float64) float64 {
	if avgTime <= 0 {
		return avg
	}
	v, _ := credit.UpdateAverage(now, 0, 0, avg, avgTime)
	return v
}

// userView and hostView are a user and a host as pages show them.
type userView struct {
	store.VolunteerUser
	Rank          int
	RecentAverage float64
	Hosts         []hostView
	MaxHosts      int // the list's bound, shown when MoreHosts
}

type hostView struct {
	store.VolunteerHost
	Rank          int
	RecentAverage float64
	LastContact   string
}

func (s *Server) hostView(h store.VolunteerHost, now float64) hostView {
	v := hostView{VolunteerHost: h, RecentAverage: recentAverage(h.ExpavgCredit, h.ExpavgTime, now), LastContact: "never"}
	if h.RPCTime > 0 {
		v.LastContact = unixTime(h.RPCTime).Format("2006-01-02 15:04") + " UTC (" + ago(now-h.RPCTime) + ")"
	}
	return v
}

// serveUser is GET /show_user.php?userid=N: the user's name, credit, and hosts with
// their credit and last contact.
func (s *Server) serveUser(w http.ResponseWriter, r *http.Request) {
	if !getOnly(w, r) {
		return
	}
	id, err := strconv.ParseInt(r.URL.Query().Get("userid"), 10, 64)
	if err != nil || id <= 0 {
		http.Error(w, "userid: want a user's number", http.StatusBadRequest)
		return
	}
	u, err := s.Store.VolunteerUser(r.Context(), id, UserPageHosts)
	if errors.Is(err, store.ErrNotFound) {
		http.Error(w, fmt.Sprintf("no user %d", id), http.StatusNotFound)
		return
	}
	if err != nil {
		s.log().Error("user page", "err", err)
		http.Error(w, "server error; try again later", http.StatusInternalServerError)
		return
	}
	now := s.now()
	v := userView{VolunteerUser: *u, RecentAverage: recentAverage(u.ExpavgCredit, u.ExpavgTime, now), MaxHosts: UserPageHosts}
	for _, h := range u.Hosts {
		v.Hosts = append(v.Hosts, s.hostView(h, now))
	}
	s.renderPage(w, "user.html", struct {
		page
		User userView
	}{s.newPage("Account data for " + u.Name), v})
}

// UserPageHosts is how many hosts a user's page lists at most, those of the greatest
// recent average credit first: an account can make hosts without end (each request
// with host id 0 makes one), and an unbounded list made the page as large as the
// attacker's host table at every view (53,000 hosts: 8.9 MB and 1.7 s a view).
const UserPageHosts = 100

// topPerPage is how many rows a top list's page shows.
const topPerPage = 20

// topParams reads a top list's sort_by and offset (BOINC's parameter names).
func topParams(w http.ResponseWriter, r *http.Request) (by string, offset int, ok bool) {
	q := r.URL.Query()
	by = q.Get("sort_by")
	if by == "" {
		by = store.ByExpavgCredit
	}
	if by != store.ByExpavgCredit && by != store.ByTotalCredit {
		http.Error(w, "sort_by: want expavg_credit or total_credit", http.StatusBadRequest)
		return "", 0, false
	}
	if o := q.Get("offset"); o != "" {
		n, err := strconv.Atoi(o)
		if err != nil || n < 0 || n > 1_000_000 {
			http.Error(w, "offset: want a number from 0 to 1000000", http.StatusBadRequest)
			return "", 0, false
		}
		offset = n
	}
	return by, offset, true
}

// nextPage is the link to a top list's next page when this one is full.
func nextPage(path, by string, offset, n int) string {
	if n < topPerPage {
		return ""
	}
	return path + "?" + url.Values{"sort_by": {by}, "offset": {strconv.Itoa(offset + topPerPage)}}.Encode()
}

type topPage struct {
	page
	By      string
	Next    string
	PerPage int
	Users   []userView
	Hosts   []hostView
}

// serveTopUsers is GET /top_users.php[?sort_by=expavg_credit|total_credit&offset=N].
func (s *Server) serveTopUsers(w http.ResponseWriter, r *http.Request) {
	if !getOnly(w, r) {
		return
	}
	by, offset, ok := topParams(w, r)
	if !ok {
		return
	}
	users, err := s.Store.TopUsers(r.Context(), by, offset, topPerPage)
	if err != nil {
		s.log().Error("top users", "err", err)
		http.Error(w, "server error; try again later", http.StatusInternalServerError)
		return
	}
	now := s.now()
	p := topPage{page: s.newPage("Top participants"), By: by, PerPage: topPerPage, Next: nextPage("top_users.php", by, offset, len(users))}
	for i, u := range users {
		p.Users = append(p.Users, userView{VolunteerUser: u, Rank: offset + i + 1, RecentAverage: recentAverage(u.ExpavgCredit, u.ExpavgTime, now)})
	}
	s.renderPage(w, "top_users.html", p)
}

// serveTopHosts is GET /top_hosts.php[?sort_by=…&offset=N].
func (s *Server) serveTopHosts(w http.ResponseWriter, r *http.Request) {
	if !getOnly(w, r) {
		return
	}
	by, offset, ok := topParams(w, r)
	if !ok {
		return
	}
	hosts, err := s.Store.TopHosts(r.Context(), by, offset, topPerPage)
	if err != nil {
		s.log().Error("top hosts", "err", err)
		http.Error(w, "server error; try again later", http.StatusInternalServerError)
		return
	}
	now := s.now()
	p := topPage{page: s.newPage("Top computers"), By: by, PerPage: topPerPage, Next: nextPage("top_hosts.php", by, offset, len(hosts))}
	for i, h := range hosts {
		v := s.hostView(h, now)
		v.Rank = offset + i + 1
		p.Hosts = append(p.Hosts, v)
	}
	s.renderPage(w, "top_hosts.html", p)
}
