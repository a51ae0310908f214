package limits

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"unicode/utf8"
)

// Field limits of what the scheduler endpoint stores. Both engines must refuse and accept
// the same values: MariaDB refuses a string longer than its column (a 500 that a client
// can never get past) where SQLite stores anything, and the MySQL driver writes NaN and
// Inf into SQL as bare words. So every value is checked in the parser, against the
// ranges below, before any SQL runs; endpoints added later check their fields here too.
const (
	// NameBytes is the width of the database's VARCHAR(254) columns: names of results,
	// files and platforms, authenticators, plan classes.
	NameBytes = 254
	// CoprocTypeBytes bounds one coprocessor type name (BOINC's are "NVIDIA", "ATI",
	// "intel_gpu", "apple_gpu").
	CoprocTypeBytes = 64
	// CoprocInstances is BOINC's MAX_COPROC_INSTANCES.
	CoprocInstances = 64
	// CPUs bounds p_ncpus and a request's instances.
	CPUs = 1 << 16
	// Seconds bounds durations a client reports or asks for (about 317 years).
	Seconds = 1e10
	// Flops bounds a processor's peak FLOPS (a hundred times today's largest GPU).
	Flops = 1e17
	// Bytes bounds a host's memory or disk figure.
	Bytes = 1e18
	// ClientStateMax is BOINC's largest client result state (RESULT_UPLOAD_FAILED).
	ClientStateMax = 7
	// AltPlatforms bounds the other platforms a host names (each a term of a query).
	AltPlatforms = 16
	// KeyBytes bounds a key in BOINC's text format (a 1024-bit RSA key is about 1 KB).
	KeyBytes = 16 << 10
	// Redundancy bounds how many results of one workunit are wanted at once: an app's
	// Nredundancy, a workunit's or batch's min_quorum and target_nresults. BOINC's
	// projects use 1 to a few; a bound keeps a typing slip (100000000) from making the
	// retry job build a hundred million rows in one transaction.
	Redundancy = 100
	// WorkunitResults bounds the counts of one workunit's results that give up on it:
	// an app's NError and Ndet, a workunit's or batch's max_error_results,
	// max_total_results and max_success_results (BOINC's defaults are 3 to 10).
	WorkunitResults = 1000
	// Quota bounds an app's quotas per instance (jobs a day, jobs in progress): a
	// million, far above any project's (BOINC's make_project writes 500 a day), and
	// small enough that times 64 instances it stays an exact integer everywhere.
	Quota = 1_000_000
)

// Checker collects the first problem among the fields it is shown, each named by its
// path ("time_stats.on_frac"). Use it in a parser: check every field, then Err.
type Checker struct {
	Prefix string // put before every path: "scheduler_request: "
	err    error
}

// FieldError is a field outside its limits.
type FieldError struct {
	Path, Problem string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Problem }

func (c *Checker) fail(path, format string, args ...any) {
	if c.err == nil {
		c.err = &FieldError{Path: c.Prefix + path, Problem: fmt.Sprintf(format, args...)}
	}
}

// Err returns the first problem found, or nil.
func (c *Checker) Err() error { return c.err }

// Number checks that v is finite and in [min, max].
func (c *Checker) Number(path string, v, min, max float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < min || v > max {
		c.fail(path, "must be a number in [%s, %s], got %s", num(min), num(max), num(v))
	}
}

// Int checks that v is in [min, max].
func (c *Checker) Int(path string, v, min, max int64) {
	if v < min || v > max {
		c.fail(path, "must be a whole number in [%d, %d], got %d", min, max, v)
	}
}

// String checks that s is valid UTF-8 of at most max bytes.
func (c *Checker) String(path, s string, max int) {
	switch {
	case len(s) > max:
		c.fail(path, "longer than %d bytes (%d)", max, len(s))
	case !utf8.ValidString(s):
		c.fail(path, "not valid UTF-8")
	}
}

// Count checks that a list has at most max elements.
func (c *Checker) Count(path string, n, max int) {
	if n > max {
		c.fail(path, "more than %d (%d)", max, n)
	}
}

// Name checks a name stored in a VARCHAR(254) column: String with NameBytes.
func (c *Checker) Name(path, s string) { c.String(path, s, NameBytes) }

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// URL checks that s is an absolute http or https URL with a host, of at most
// NameBytes bytes (a VARCHAR(254) column on MariaDB; SQLite would store any length, so
// both engines refuse the same URLs only if the parser does). Other schemes
// (javascript:, file:) are refused: clients and web pages follow these URLs.
func (c *Checker) URL(path, s string) {
	if p := URLProblem(s, NameBytes); p != "" {
		c.fail(path, "%s", p)
	}
}

// URLProblem says what is wrong with s as an http(s) URL of at most max bytes, or "".
func URLProblem(s string, max int) string {
	if len(s) > max {
		return fmt.Sprintf("longer than %d bytes (%d)", max, len(s))
	}
	if !utf8.ValidString(s) {
		return "not valid UTF-8"
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("want an http:// or https:// URL with a host, got %q", s)
	}
	return ""
}
