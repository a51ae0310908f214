package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// What volunteers see (issue 31): a user's page, top users and hosts, and the
// statistics export sites read (BOINC's db_dump). Names are as volunteers chose them:
// the readers escape them.

// VolunteerUser is a user as the volunteers' pages show it.
type VolunteerUser struct {
	ID           int64   `json:"id"`
	Name         string  `json:"name"`
	CreateTime   float64 `json:"create_time"`
	TotalCredit  float64 `json:"total_credit"`
	ExpavgCredit float64 `json:"expavg_credit"`
	ExpavgTime   float64 `json:"expavg_time"`
	// Hosts are the user's hosts, most recent average credit first (VolunteerUser
	// fills them, at most the number it is asked for; the top list does not).
	// MoreHosts says the user has more than Hosts holds.
	Hosts     []VolunteerHost `json:"hosts,omitempty"`
	MoreHosts bool            `json:"more_hosts,omitempty"`
	// For the export: the account's key and address make its cross-project id
	// (never shown).
	Authenticator string `json:"-"`
	EmailAddr     string `json:"-"`
}

// VolunteerHost is a host as the volunteers' pages show it.
type VolunteerHost struct {
	ID           int64   `json:"id"`
	UserID       int64   `json:"userid"`
	UserName     string  `json:"user_name,omitempty"`
	Platform     string  `json:"platform"`
	PNCPUs       int     `json:"p_ncpus"`
	PFpops       float64 `json:"p_fpops"`
	MNBytes      float64 `json:"m_nbytes"`
	Coprocs      string  `json:"coprocs"`
	CreateTime   float64 `json:"create_time"`
	RPCTime      float64 `json:"rpc_time"`
	TotalCredit  float64 `json:"total_credit"`
	ExpavgCredit float64 `json:"expavg_credit"`
	ExpavgTime   float64 `json:"expavg_time"`
	HostCPID     string  `json:"-"` // the client's; the export publishes a hash of it
	UserEmail    string  `json:"-"`
}

// Orders of the top lists, as BOINC's top_users.php and top_hosts.php sort.
const (
	ByExpavgCredit = "expavg_credit"
	ByTotalCredit  = "total_credit"
)

const volunteerHostColumns = `h.id, h.userid, COALESCE(u.name, ''), h.platform_name, h.p_ncpus, h.p_fpops, h.m_nbytes, h.coprocs,
	h.create_time, h.rpc_time, h.total_credit, h.expavg_credit, h.expavg_time, h.host_cpid, COALESCE(u.email_addr, '')`

func scanVolunteerHost(rows *sql.Rows) (VolunteerHost, error) {
	var h VolunteerHost
	err := rows.Scan(&h.ID, &h.UserID, &h.UserName, &h.Platform, &h.PNCPUs, &h.PFpops, &h.MNBytes, &h.Coprocs,
		&h.CreateTime, &h.RPCTime, &h.TotalCredit, &h.ExpavgCredit, &h.ExpavgTime, &h.HostCPID, &h.UserEmail)
	return h, err
}

const volunteerUserColumns = `u.id, u.name, u.create_time, u.total_credit, u.expavg_credit, u.expavg_time, u.authenticator, u.email_addr`

func scanVolunteerUser(sc interface{ Scan(...any) error }) (VolunteerUser, error) {
	var u VolunteerUser
	err := sc.Scan(&u.ID, &u.Name, &u.CreateTime, &u.TotalCredit, &u.ExpavgCredit, &u.ExpavgTime, &u.Authenticator, &u.EmailAddr)
	return u, err
}

// VolunteerUser returns user id with at most maxHosts of its hosts (those of the
// greatest recent average credit), or ErrNotFound. The bound is what keeps a user's
// page small: any account can make hosts by the thousand (each scheduler request with
// host id 0 makes one), and the page is anyone's to ask for.
func (s *Store) VolunteerUser(ctx context.Context, id int64, maxHosts int) (*VolunteerUser, error) {
	u, err := scanVolunteerUser(s.DB.QueryRowContext(ctx, `SELECT `+volunteerUserColumns+` FROM user u WHERE u.id=?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("user %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	rows, err := s.DB.QueryContext(ctx, `SELECT `+volunteerHostColumns+` FROM host h LEFT JOIN user u ON u.id=h.userid
		WHERE h.userid=? ORDER BY h.expavg_credit DESC, h.id LIMIT ?`, id, max(0, maxHosts)+1)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	u.Hosts = []VolunteerHost{}
	for rows.Next() {
		h, err := scanVolunteerHost(rows)
		if err != nil {
			return nil, err
		}
		if len(u.Hosts) == maxHosts {
			u.MoreHosts = true
			break
		}
		u.Hosts = append(u.Hosts, h)
	}
	return &u, rows.Err()
}

func orderColumn(by string) (string, error) {
	switch by {
	case ByExpavgCredit, ByTotalCredit:
		return by, nil
	}
	return "", fmt.Errorf("order %q: want %s or %s", by, ByExpavgCredit, ByTotalCredit)
}

// TopUsers returns n users from offset on, by credit (by: ByExpavgCredit or
// ByTotalCredit) highest first, ties by id; users without credit are left out.
func (s *Store) TopUsers(ctx context.Context, by string, offset, n int) ([]VolunteerUser, error) {
	col, err := orderColumn(by)
	if err != nil {
		return nil, err
	}
	rows, err := s.DB.QueryContext(ctx, `SELECT `+volunteerUserColumns+` FROM user u WHERE u.`+col+`>0
		ORDER BY u.`+col+` DESC, u.id LIMIT ? OFFSET ?`, n, offset)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []VolunteerUser{}
	for rows.Next() {
		u, err := scanVolunteerUser(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// TopHosts returns n hosts from offset on, by credit highest first, with their
// users' names; hosts without credit are left out.
func (s *Store) TopHosts(ctx context.Context, by string, offset, n int) ([]VolunteerHost, error) {
	col, err := orderColumn(by)
	if err != nil {
		return nil, err
	}
	rows, err := s.DB.QueryContext(ctx, `SELECT `+volunteerHostColumns+` FROM host h LEFT JOIN user u ON u.id=h.userid
		WHERE h.`+col+`>0 ORDER BY h.`+col+` DESC, h.id LIMIT ? OFFSET ?`, n, offset)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []VolunteerHost{}
	for rows.Next() {
		h, err := scanVolunteerHost(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// EachUser calls f for every user, in id order, reading in pages of a thousand so
// that no transaction or result set stays open for the whole export.
func (s *Store) EachUser(ctx context.Context, f func(VolunteerUser) error) error {
	return eachPage(ctx, s, `SELECT `+volunteerUserColumns+` FROM user u WHERE u.id>? ORDER BY u.id LIMIT 1000`, func(rows *sql.Rows) (int64, error) {
		u, err := scanVolunteerUser(rows)
		if err != nil {
			return 0, err
		}
		return u.ID, f(u)
	})
}

// EachHost calls f for every host, in id order, as EachUser.
func (s *Store) EachHost(ctx context.Context, f func(VolunteerHost) error) error {
	return eachPage(ctx, s, `SELECT `+volunteerHostColumns+` FROM host h LEFT JOIN user u ON u.id=h.userid WHERE h.id>? ORDER BY h.id LIMIT 1000`, func(rows *sql.Rows) (int64, error) {
		h, err := scanVolunteerHost(rows)
		if err != nil {
			return 0, err
		}
		return h.ID, f(h)
	})
}

// eachPage runs q (with the last id seen as its argument) until a page is empty.
func eachPage(ctx context.Context, s *Store, q string, row func(*sql.Rows) (int64, error)) error {
	var after int64
	for {
		rows, err := s.DB.QueryContext(ctx, q, after)
		if err != nil {
			return err
		}
		n := 0
		for rows.Next() {
			id, err := row(rows)
			if err != nil {
				rows.Close()
				return err
			}
			after = id
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
	}
}

// TotalCredit is the credit of all users (the stats export's tables.xml).
func (s *Store) TotalCredit(ctx context.Context) (float64, error) {
	var c float64
	err := s.DB.QueryRowContext(ctx, `SELECT COALESCE(SUM(total_credit), 0) FROM user`).Scan(&c)
	return c, err
}
