package server

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bkit/bkit/lib/store"
)

// BOINC's error numbers that lookup_account.php and create_account.php answer with
// (lib/error_numbers.h; -1 is its web code's "any other").
const (
	errOther        = -1
	errDBNotFound   = -136
	errDBNotUnique  = -137
	errBadUserName  = -188
	errBadEmailAddr = -205
	errBadPasswd    = -206
)

// serveProjectConfig answers GET /get_project_config.php as BOINC's web code does: what
// a client (the Manager's "add project" wizard, boinccmd --get_project_config) reads
// before it looks up or creates an account: the project's name and master URL, the
// platforms it has app versions for, and, unless Config.AccountCreation, that accounts
// are not created from clients (bserver user add makes them).
func (s *Server) serveProjectConfig(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var platforms []string
	err := s.Store.InTx(r.Context(), func(tx *store.Tx) error {
		platforms = nil
		avs, err := tx.AppVersions()
		for _, av := range avs {
			if av.Platform != "" && !slices.Contains(platforms, av.Platform) {
				platforms = append(platforms, av.Platform)
			}
		}
		return err
	})
	if err != nil {
		s.log().Error("project config failed", "err", err)
		http.Error(w, "server error; try again later", http.StatusInternalServerError)
		return
	}
	slices.Sort(platforms)
	var b bytes.Buffer
	esc := html.EscapeString
	fmt.Fprintf(&b, "<project_config>\n    <name>%s</name>\n    <master_url>%s</master_url>\n    <web_rpc_url_base>%s</web_rpc_url_base>\n",
		esc(orDefault(s.Config.ProjectName, "bkit project")), esc(s.masterURL(r)), esc(s.masterURL(r)))
	if !s.Config.AccountCreation {
		b.WriteString("    <account_creation_disabled/>\n    <client_account_creation_disabled/>\n")
	}
	b.WriteString("    <min_passwd_length>6</min_passwd_length>\n    <platforms>\n")
	for _, p := range platforms {
		fmt.Fprintf(&b, "        <platform>\n            <platform_name>%s</platform_name>\n            <user_friendly_name>%s</user_friendly_name>\n        </platform>\n", esc(p), esc(p))
	}
	b.WriteString("    </platforms>\n</project_config>\n")
	writeXML(w, http.StatusOK, b.Bytes())
}

// serveLookupAccount answers GET /lookup_account.php?email_addr=E&passwd_hash=H as
// BOINC's web code does: the account key of the account with that address whose
// password hash (store.PasswdHash, which the client computes) is H, or an <error>
// with BOINC's error number, which the client shows.
func (s *Server) serveLookupAccount(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !s.accountAllowed(w, r) || !accountForm(w, r) {
		return
	}
	email, hash := r.FormValue("email_addr"), r.FormValue("passwd_hash")
	log := s.log().With("remote", r.RemoteAddr)
	if email == "" || len(email) > 254 || len(hash) > 254 {
		writeAccountError(w, errDBNotFound, "no account with that e-mail address")
		return
	}
	auth, err := s.Store.LookupAccount(r.Context(), email, hash)
	switch {
	case errors.Is(err, store.ErrNotFound):
		log.Warn("account lookup failed", "reason", "unknown address")
		writeAccountError(w, errDBNotFound, "no account with that e-mail address")
	case errors.Is(err, store.ErrBadPassword):
		log.Warn("account lookup failed", "reason", "wrong password")
		s.countAccountRefused("bad_password")
		writeAccountError(w, errBadPasswd, "wrong password")
	case err != nil:
		log.Error("account lookup failed", "err", err)
		http.Error(w, "server error; try again later", http.StatusInternalServerError)
	default:
		log.Info("account looked up")
		writeXML(w, http.StatusOK, fmt.Appendf(nil, "<account_out>\n    <authenticator>%s</authenticator>\n</account_out>\n", html.EscapeString(auth)))
	}
}

// serveCreateAccount answers GET /create_account.php?email_addr=E&passwd_hash=H&user_name=N
// as BOINC's web code does: the account key of a new account (or of the account with
// that address and password hash, when the client asks again), or an <error> with
// BOINC's error number. BOINC's checks: a user name without leading or trailing
// space, HTML special characters or control characters, and not a number; an e-mail
// address of valid syntax; a 32-character password hash.
func (s *Server) serveCreateAccount(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	log := s.log().With("remote", r.RemoteAddr)
	if !s.Config.AccountCreation {
		s.countAccountRefused("creation_disabled")
		writeAccountError(w, errOther, "The project is not accepting new accounts.")
		return
	}
	if !s.accountAllowed(w, r) || !accountForm(w, r) {
		return
	}
	email, hash, name := strings.ToLower(r.FormValue("email_addr")), r.FormValue("passwd_hash"), r.FormValue("user_name")
	if reason := badUserName(name); reason != "" {
		writeAccountError(w, errBadUserName, reason)
		return
	}
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email || a.Name != "" || len(email) > 254 {
		writeAccountError(w, errBadEmailAddr, "invalid e-mail address")
		return
	}
	if len(hash) != 32 {
		writeAccountError(w, errOther, "password hash length not 32")
		return
	}
	if strings.Trim(strings.ToLower(hash), "0123456789abcdef") != "" {
		writeAccountError(w, errOther, "password hash not hexadecimal")
		return
	}
	u, created, err := s.Store.CreateAccount(r.Context(), name, email, hash, s.now())
	switch {
	case errors.Is(err, store.ErrExists):
		log.Warn("account creation refused", "reason", "address taken")
		writeAccountError(w, errDBNotUnique, "an account with that e-mail address already exists")
	case err != nil:
		log.Error("account creation failed", "err", err)
		http.Error(w, "server error; try again later", http.StatusInternalServerError)
	default:
		if created {
			log.Info("account created", "user", u.ID)
		}
		writeXML(w, http.StatusOK, fmt.Appendf(nil, "<account_out>\n    <authenticator>%s</authenticator>\n</account_out>\n", html.EscapeString(u.Authenticator)))
	}
}

// maxAccountForm bounds the body of an account request. Clients send their few
// parameters in the query string; a body is read only up to this, since without a
// bound Go's form parsing holds 32 MiB of a multipart body in memory (and writes the
// rest of a file part to disk) for each request.
const maxAccountForm = 16 << 10

// accountForm parses r's parameters, its body read up to maxAccountForm, and answers
// in BOINC's error form when the body is larger or malformed.
func accountForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxAccountForm)
	// ParseForm first: ParseMultipartForm drops its error when the body is not multipart.
	err := r.ParseForm()
	if err == nil {
		err = r.ParseMultipartForm(maxAccountForm)
	}
	if err == nil || errors.Is(err, http.ErrNotMultipart) {
		return true
	}
	writeAccountError(w, errOther, fmt.Sprintf("request body larger than %d bytes or malformed", maxAccountForm))
	return false
}

// badUserName says what is wrong with a user name a client gave, as BOINC's
// is_valid_user_name does, or "".
func badUserName(name string) string {
	switch {
	case strings.TrimSpace(name) != name:
		return "user name cannot have leading or trailing white space"
	case name == "":
		return "user name must be nonempty"
	case len(name) > 254 || !utf8.ValidString(name):
		return "user name too long or not UTF-8"
	case strings.ContainsFunc(name, func(c rune) bool { return c < 32 || c == 127 || strings.ContainsRune(`'"<>&`, c) }):
		return "user name may not contain special characters"
	}
	if isNumeric(name) {
		return "user name may not be a number"
	}
	return ""
}

// isNumeric is PHP's is_numeric for names: a decimal number ("12", "1.5", "1e3");
// NaN and Inf, which Go's parser also reads, are names.
func isNumeric(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil && strings.ContainsAny(s, "0123456789")
}

func writeAccountError(w http.ResponseWriter, num int, msg string) {
	writeXML(w, http.StatusOK, fmt.Appendf(nil, "<error>\n    <error_num>%d</error_num>\n    <error_msg>%s</error_msg>\n</error>\n", num, html.EscapeString(msg)))
}
