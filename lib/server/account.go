package server

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"net/http"
	"slices"

	"github.com/bkit/bkit/lib/store"
)

// BOINC's error numbers that lookup_account.php answers with (lib/error_numbers.h).
const (
	errDBNotFound = -136
	errBadPasswd  = -206
)

// serveProjectConfig answers GET /get_project_config.php as BOINC's web code does: what
// a client (the Manager's "add project" wizard, boinccmd --get_project_config) reads
// before it looks up an account: the project's name and master URL, the platforms it
// has app versions for, and that accounts are not created from clients (bserver
// user add makes them).
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
	b.WriteString("    <account_creation_disabled/>\n    <client_account_creation_disabled/>\n    <min_passwd_length>6</min_passwd_length>\n    <platforms>\n")
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
		writeAccountError(w, errBadPasswd, "wrong password")
	case err != nil:
		log.Error("account lookup failed", "err", err)
		http.Error(w, "server error; try again later", http.StatusInternalServerError)
	default:
		log.Info("account looked up")
		writeXML(w, http.StatusOK, fmt.Appendf(nil, "<account_out>\n    <authenticator>%s</authenticator>\n</account_out>\n", html.EscapeString(auth)))
	}
}

func writeAccountError(w http.ResponseWriter, num int, msg string) {
	writeXML(w, http.StatusOK, fmt.Appendf(nil, "<error>\n    <error_num>%d</error_num>\n    <error_msg>%s</error_msg>\n</error>\n", num, html.EscapeString(msg)))
}
