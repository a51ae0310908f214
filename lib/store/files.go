package store

import (
	"cmp"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// User is a volunteer's account. Authenticator is the account key their client
// presents; every host a client attaches with it belongs to the user.
type User struct {
	ID            int64   `json:"id"`
	Name          string  `json:"name"`
	EmailAddr     string  `json:"email_addr"`
	Authenticator string  `json:"authenticator"`
	CreateTime    float64 `json:"create_time"`
	Hosts         int64   `json:"hosts"`
	// Credit granted to the account's valid results (bretry validate): in all, and
	// BOINC's average per day.
	TotalCredit  float64 `json:"total_credit"`
	ExpavgCredit float64 `json:"expavg_credit"`
}

// AddUser creates an account with a fresh account key. The e-mail address is stored in
// lower case, as every account's is (BOINC's too), so that create_account.php finds it
// whatever case a client sends.
func (s *Store) AddUser(ctx context.Context, name, email string, now float64) (*User, error) {
	email = strings.ToLower(email)
	u := &User{Name: name, EmailAddr: email, Authenticator: NewAuthenticator(), CreateTime: now}
	err := s.InTx(ctx, func(tx *Tx) error {
		r, err := tx.exec(`INSERT INTO user (create_time, name, email_addr, authenticator) VALUES (?, ?, ?, ?)`,
			now, name, email, u.Authenticator)
		if err != nil {
			return err
		}
		u.ID, err = r.LastInsertId()
		return err
	})
	return u, err
}

// PasswdHash is BOINC's password hash of an account: the MD5 (hex) of the password
// followed by the lower-case e-mail address. Clients send it to lookup_account.php.
func PasswdHash(password, email string) string {
	sum := md5.Sum([]byte(password + strings.ToLower(email)))
	return hex.EncodeToString(sum[:])
}

// ErrBadPassword: lookup of an account with a known address and the wrong password.
var ErrBadPassword = errors.New("wrong password")

// AddUserWithPassword creates an account that a client can also find by e-mail
// address and password (BOINC's lookup_account.php), as AddUser does otherwise. The
// address must be new, unused by any account (ErrExists otherwise): it names the
// account. It is stored in lower case, as BOINC does, so that the lookup reads the index.
func (s *Store) AddUserWithPassword(ctx context.Context, name, email, password string, now float64) (*User, error) {
	email = strings.ToLower(email)
	u, _, err := s.addPasswordUser(ctx, name, email, PasswdHash(password, email), false, now)
	return u, err
}

// CreateAccount is BOINC's create_account.php: it creates an account with e-mail
// address email (stored in lower case), name and password hash passwdHash (PasswdHash,
// which the client computes) and returns it with created true. An account with that
// address and a password already exists: with the same hash it is returned (created
// false: the client asked again, as BOINC answers it), with another ErrExists; so is an
// address of an account without a password (bserver user add --email), as BOINC has
// one account per address. Two servers creating the same address at once make one
// account.
func (s *Store) CreateAccount(ctx context.Context, name, email, passwdHash string, now float64) (*User, bool, error) {
	return s.addPasswordUser(ctx, name, strings.ToLower(email), strings.ToLower(passwdHash), true, now)
}

// addPasswordUser inserts an account with a password; password_email's unique index
// settles a race for one address. With same, an existing account with the same
// hash is returned instead of ErrExists.
func (s *Store) addPasswordUser(ctx context.Context, name, email, hash string, same bool, now float64) (*User, bool, error) {
	u := &User{Name: name, EmailAddr: email, Authenticator: NewAuthenticator(), CreateTime: now}
	created := false
	err := s.InTx(ctx, func(tx *Tx) error {
		created = false
		var old User
		var oldHash string
		// Any account with the address, one with a password first (the one a client
		// asking again made).
		err := tx.queryRow(`SELECT id, name, email_addr, authenticator, create_time, passwd_hash FROM user WHERE email_addr=?
			ORDER BY CASE WHEN passwd_hash<>'' THEN 0 ELSE 1 END, id LIMIT 1`, email).
			Scan(&old.ID, &old.Name, &old.EmailAddr, &old.Authenticator, &old.CreateTime, &oldHash)
		switch {
		case err == nil && same && oldHash != "" && subtle.ConstantTimeCompare([]byte(oldHash), []byte(hash)) == 1:
			*u = old
			return nil
		case err == nil:
			return fmt.Errorf("an account with e-mail address %q: %w", email, ErrExists)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		r, err := tx.exec(`INSERT INTO user (create_time, name, email_addr, authenticator, passwd_hash, password_email) VALUES (?, ?, ?, ?, ?, ?)`,
			now, name, email, u.Authenticator, hash, email)
		if isUniqueViolation(err) {
			// Another server made it since the look: that account is the one.
			return fmt.Errorf("an account with e-mail address %q: %w", email, errRaced)
		}
		if err != nil {
			return err
		}
		u.ID, err = r.LastInsertId()
		created = true
		return err
	})
	if errors.Is(err, errRaced) {
		// Read again in a new transaction: the other server's account is committed.
		return s.addPasswordUser(ctx, name, email, hash, same, now)
	}
	return u, created, err
}

// errRaced: another transaction inserted the same unique key first; the caller reads
// again.
var errRaced = errors.New("made at the same time by another server")

// LookupAccount returns the account key of the account with e-mail address email
// (in any case) whose password hash is passwdHash (BOINC's lookup_account.php):
// ErrNotFound when no account with a password has that address, ErrBadPassword when
// the hash differs.
func (s *Store) LookupAccount(ctx context.Context, email, passwdHash string) (string, error) {
	var auth, hash string
	err := s.DB.QueryRowContext(ctx, `SELECT authenticator, passwd_hash FROM user WHERE email_addr=? AND passwd_hash<>'' ORDER BY id LIMIT 1`,
		strings.ToLower(email)).Scan(&auth, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", err
	}
	if subtle.ConstantTimeCompare([]byte(hash), []byte(strings.ToLower(passwdHash))) != 1 {
		return "", ErrBadPassword
	}
	return auth, nil
}

// Users returns every account with its number of hosts, by id.
func (s *Store) Users(ctx context.Context) ([]User, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT u.id, u.name, u.email_addr, u.authenticator, u.create_time,
		(SELECT COUNT(*) FROM host h WHERE h.userid=u.id), u.total_credit, u.expavg_credit FROM user u ORDER BY u.id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []User{}
	for rows.Next() {
		var u User
		if err := rows.Scan(&u.ID, &u.Name, &u.EmailAddr, &u.Authenticator, &u.CreateTime, &u.Hosts, &u.TotalCredit, &u.ExpavgCredit); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// UserByAuthenticator returns the account whose key is auth, or ErrNotFound.
func (t *Tx) UserByAuthenticator(auth string) (*User, error) {
	var u User
	err := t.queryRow(`SELECT id, name, email_addr, authenticator, create_time, total_credit, expavg_credit FROM user WHERE authenticator=?`, auth).
		Scan(&u.ID, &u.Name, &u.EmailAddr, &u.Authenticator, &u.CreateTime, &u.TotalCredit, &u.ExpavgCredit)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return &u, err
}

// UserByID returns the account id, or ErrNotFound.
func (t *Tx) UserByID(id int64) (*User, error) {
	var u User
	err := t.queryRow(`SELECT id, name, email_addr, authenticator, create_time, total_credit, expavg_credit FROM user WHERE id=?`, id).
		Scan(&u.ID, &u.Name, &u.EmailAddr, &u.Authenticator, &u.CreateTime, &u.TotalCredit, &u.ExpavgCredit)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return &u, err
}

// AppVersionFile is one file of an app version, stored in the project's download
// directory under Name.
type AppVersionFile struct {
	Name        string
	OpenName    string // the name the app opens it by in its slot
	MainProgram bool
	NBytes      float64
	MD5         string
	Signature   string // BOINC's file_signature: hex, ending ".\n"
}

// AppVersionFiles returns the files of app version id, in order.
func (t *Tx) AppVersionFiles(id int64) ([]AppVersionFile, error) {
	rows, err := t.query(`SELECT name, open_name, main_program, nbytes, md5_cksum, file_signature FROM app_version_file
		WHERE app_version_id=? ORDER BY file_num`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []AppVersionFile
	for rows.Next() {
		var f AppVersionFile
		var main int
		if err := rows.Scan(&f.Name, &f.OpenName, &main, &f.NBytes, &f.MD5, &f.Signature); err != nil {
			return nil, err
		}
		f.MainProgram = main != 0
		out = append(out, f)
	}
	return out, rows.Err()
}

// WUFile is an input file of a workunit, in the download directory under Name.
type WUFile struct {
	Name     string
	OpenName string
	NBytes   float64
	MD5      string
}

// WUOutput is an output file each result of a workunit writes: BOINC's result
// template. Output k of result R is named R_k.
type WUOutput struct {
	OpenName  string
	MaxNBytes float64
}

// WUFilesOf returns the input files and outputs of workunits wuids, in order, by
// workunit (absent: none): one query for a reply's jobs (a UNION of both tables)
// instead of two per job. The rows are put in order here: an ORDER BY over the UNION
// makes MariaDB copy it into a temporary table and sort it, on every RPC.
func (t *Tx) WUFilesOf(wuids []int64) (map[int64][]WUFile, map[int64][]WUOutput, error) {
	type row struct {
		wu, kind, num int64
		f             WUFile
	}
	var all []row
	for lo := 0; lo < len(wuids); lo += 500 {
		list, args := inList(wuids[lo:min(len(wuids), lo+500)])
		rows, err := t.query(`SELECT workunitid, 0, file_num, name, open_name, nbytes, md5_cksum FROM wu_file WHERE workunitid IN `+list+`
			UNION ALL SELECT workunitid, 1, file_num, '', open_name, max_nbytes, '' FROM wu_output WHERE workunitid IN `+list,
			append(args, args...)...)
		if err != nil {
			return nil, nil, err
		}
		for rows.Next() {
			var r row
			if err := rows.Scan(&r.wu, &r.kind, &r.num, &r.f.Name, &r.f.OpenName, &r.f.NBytes, &r.f.MD5); err != nil {
				rows.Close()
				return nil, nil, err
			}
			all = append(all, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, nil, err
		}
	}
	slices.SortFunc(all, func(a, b row) int {
		return cmp.Or(cmp.Compare(a.wu, b.wu), cmp.Compare(a.kind, b.kind), cmp.Compare(a.num, b.num))
	})
	in, out := map[int64][]WUFile{}, map[int64][]WUOutput{}
	for _, r := range all {
		if r.kind == 0 {
			in[r.wu] = append(in[r.wu], r.f)
		} else {
			out[r.wu] = append(out[r.wu], WUOutput{OpenName: r.f.OpenName, MaxNBytes: r.f.NBytes})
		}
	}
	return in, out, nil
}

// WUFiles returns workunit wuid's input files and outputs, in order.
func (t *Tx) WUFiles(wuid int64) ([]WUFile, []WUOutput, error) {
	rows, err := t.query(`SELECT name, open_name, nbytes, md5_cksum FROM wu_file WHERE workunitid=? ORDER BY file_num`, wuid)
	if err != nil {
		return nil, nil, err
	}
	var in []WUFile
	for rows.Next() {
		var f WUFile
		if err := rows.Scan(&f.Name, &f.OpenName, &f.NBytes, &f.MD5); err != nil {
			rows.Close()
			return nil, nil, err
		}
		in = append(in, f)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	rows, err = t.query(`SELECT open_name, max_nbytes FROM wu_output WHERE workunitid=? ORDER BY file_num`, wuid)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var out []WUOutput
	for rows.Next() {
		var o WUOutput
		if err := rows.Scan(&o.OpenName, &o.MaxNBytes); err != nil {
			return nil, nil, err
		}
		out = append(out, o)
	}
	return in, out, rows.Err()
}

// UploadTarget is what the upload handler needs to know about an output file a
// host wants to upload.
type UploadTarget struct {
	ResultID    int64
	HostID      int64
	ServerState int
	Outcome     int
	MaxNBytes   float64
	// Complete: the file was uploaded in full and recorded (RecordUpload), with this
	// size and MD5. A complete file is never replaced.
	Complete bool
	NBytes   float64
	MD5      string
}

// outputFileQuery reads an UploadTarget; the caller adds the result's condition.
const outputFileQuery = `SELECT r.id, r.hostid, r.server_state, r.outcome, o.max_nbytes, f.nbytes, f.md5_cksum FROM result r
	JOIN wu_output o ON o.workunitid=r.workunitid AND o.file_num=?
	LEFT JOIN result_file f ON f.resultid=r.id AND f.file_num=o.file_num WHERE `

// OutputFile finds output file fileNum of the result named result, or ErrNotFound.
func (t *Tx) OutputFile(result string, fileNum int) (*UploadTarget, error) {
	return t.outputFile(outputFileQuery+`r.name=?`, fileNum, result)
}

// LockOutputFile is OutputFile of result resultID with the result's row locked until
// the transaction ends, so that the state it reads holds while an upload is recorded:
// a report of the result (RecordReports) or another upload of its files waits for the
// commit (MySQL; SQLite's write transactions run one at a time anyway).
func (t *Tx) LockOutputFile(resultID int64, fileNum int) (*UploadTarget, error) {
	if err := t.lockResults([]int64{resultID}); err != nil {
		return nil, err
	}
	return t.outputFile(outputFileQuery+`r.id=?`, fileNum, resultID)
}

func (t *Tx) outputFile(query string, args ...any) (*UploadTarget, error) {
	var u UploadTarget
	var nbytes sql.NullFloat64
	var md5 sql.NullString
	err := t.queryRow(query, args...).Scan(&u.ResultID, &u.HostID, &u.ServerState, &u.Outcome, &u.MaxNBytes, &nbytes, &md5)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	u.Complete, u.NBytes, u.MD5 = nbytes.Valid, nbytes.Float64, md5.String
	return &u, err
}

// lockResults locks the rows of results ids until the transaction ends (MySQL; a
// no-op on SQLite, whose write transaction holds the whole database).
func (t *Tx) lockResults(ids []int64) error {
	if t.s.dialect.forUpdate == "" || len(ids) == 0 {
		return nil
	}
	for lo := 0; lo < len(ids); lo += 500 {
		part := ids[lo:min(len(ids), lo+500)]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		rows, err := t.query(`SELECT id FROM result WHERE id IN (?`+strings.Repeat(",?", len(part)-1)+`)`+t.s.dialect.forUpdate, args...)
		if err != nil {
			return err
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

// UploadedFile is an output file a host uploaded in full.
type UploadedFile struct {
	ResultID   int64   `json:"resultid"`
	ResultName string  `json:"result"`
	FileNum    int     `json:"file_num"`
	Name       string  `json:"name"`
	NBytes     float64 `json:"nbytes"`
	MD5        string  `json:"md5_cksum"`
	SHA256     string  `json:"sha256"`
	UploadTime float64 `json:"upload_time"`
}

// RecordUpload notes that an output file is complete in the upload directory. A file
// is recorded once: a second record of it is ErrExists (the upload handler checks
// LockOutputFile first, in the same transaction).
//
// A late result's file may come after its workunit's files were deleted (the result
// timed out, the workunit was settled without it, assimilated, its files deleted;
// the upload handler takes a timed-out result's files, as it takes its late report).
// The file deleter will not look at that workunit again, so the file is recorded
// for deletion at once (a deleted_file row still to carry out, which the next
// delete-files pass deletes and purge waits for), as BOINC's transitioner marks a
// late result's files for its file deleter. The workunit's row is locked first (MySQL),
// so a deletion deciding on it at the same moment either sees this file or is seen.
func (t *Tx) RecordUpload(f UploadedFile) error {
	var wu int64
	var fileDelete int
	err := t.queryRow(`SELECT workunitid FROM result WHERE id=?`, f.ResultID).Scan(&wu)
	if err == nil {
		err = t.queryRow(`SELECT file_delete_state FROM workunit WHERE id=?`+t.ForUpdate(), wu).Scan(&fileDelete)
	}
	if err != nil {
		return fmt.Errorf("output file %s: its workunit: %w", f.Name, err)
	}
	_, err = t.exec(`INSERT INTO result_file (resultid, file_num, name, nbytes, md5_cksum, sha256, upload_time) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		f.ResultID, f.FileNum, f.Name, f.NBytes, f.MD5, f.SHA256, f.UploadTime)
	if isUniqueViolation(err) {
		return fmt.Errorf("output file %s: %w", f.Name, ErrExists)
	}
	if err != nil || fileDelete != FileDeleteDone {
		return err
	}
	_, err = t.exec(`INSERT INTO deleted_file (create_time, workunitid, directory, name, nbytes) VALUES (?, ?, ?, ?, ?)`,
		f.UploadTime, wu, UploadDirectory, f.Name, f.NBytes)
	return err
}

// UploadedFiles returns every uploaded output file, by result and file number.
func (s *Store) UploadedFiles(ctx context.Context) ([]UploadedFile, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT f.resultid, r.name, f.file_num, f.name, f.nbytes, f.md5_cksum, f.sha256, f.upload_time
		FROM result_file f JOIN result r ON r.id=f.resultid ORDER BY f.resultid, f.file_num`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []UploadedFile
	for rows.Next() {
		var f UploadedFile
		if err := rows.Scan(&f.ResultID, &f.ResultName, &f.FileNum, &f.Name, &f.NBytes, &f.MD5, &f.SHA256, &f.UploadTime); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// OutputDigest is the digest of the output files uploaded for the result named
// result, for validation: "sha256:HEX" of the file when it has one output, or of the
// lines "k:HEX\n" (file number and file SHA-256) when it has several; "" when none was
// uploaded. Results whose outputs agree byte for byte get equal digests.
func (t *Tx) OutputDigest(result string) (string, error) {
	var id int64
	err := t.queryRow(`SELECT id FROM result WHERE name=?`, result).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	files, err := t.uploadedSums([]int64{id})
	if err != nil || len(files[id]) == 0 {
		return "", err
	}
	return outputDigest(files[id]), nil
}

// outputDigest is OutputDigest of the SHA-256 sums of a result's uploaded files, by
// file number.
func outputDigest(sums map[int]string) string {
	ks := make([]int, 0, len(sums))
	for k := range sums {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	if len(ks) == 1 {
		return "sha256:" + sums[ks[0]]
	}
	var b strings.Builder
	for _, k := range ks {
		fmt.Fprintf(&b, "%d:%s\n", k, sums[k])
	}
	sum := sha256.Sum256([]byte(b.String()))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// uploadedSums returns the SHA-256 of each recorded output file of results ids, by
// result and file number.
func (t *Tx) uploadedSums(ids []int64) (map[int64]map[int]string, error) {
	out := map[int64]map[int]string{}
	for lo := 0; lo < len(ids); lo += 500 {
		part := ids[lo:min(len(ids), lo+500)]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		rows, err := t.query(`SELECT resultid, file_num, sha256 FROM result_file WHERE resultid IN (?`+strings.Repeat(",?", len(part)-1)+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id int64
			var k int
			var h string
			if err := rows.Scan(&id, &k, &h); err != nil {
				rows.Close()
				return nil, err
			}
			if out[id] == nil {
				out[id] = map[int]string{}
			}
			out[id][k] = h
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ReportedOutput is what the server knows of the output of a result a host reports
// whose workunit declares output files.
type ReportedOutput struct {
	Declared int   // output files the result template declares
	Missing  []int // the declared files not uploaded (complete and recorded), in order
	// Digest is OutputDigest of the uploaded files when none is missing, else "".
	Digest string
}

// ReportedOutputs returns ReportedOutput of each of the named results whose workunit
// declares output files (results without any are absent). The results' rows are locked
// first (LockOutputFile's lock), so an upload of one of their files either committed
// before and is counted, or waits and then finds the result reported. The scheduler
// passes every reported result: the rows read here are those RecordReports records
// next in the transaction, which then reads nothing again.
func (t *Tx) ReportedOutputs(results []string) (map[string]ReportedOutput, error) {
	out := map[string]ReportedOutput{}
	rows, err := t.reportedRows(results)
	if err != nil {
		return nil, err
	}
	t.reported = rows
	declared := map[int64][]int{}
	names := map[int64]string{}
	for name, r := range rows {
		if len(r.declared) > 0 {
			declared[r.id] = slices.Clone(r.declared)
			names[r.id] = name
		}
	}
	if len(declared) == 0 {
		return out, nil
	}
	ids := make([]int64, 0, len(declared))
	for id := range declared {
		ids = append(ids, id)
	}
	slices.Sort(ids) // one lock order for every transaction
	if err := t.lockResults(ids); err != nil {
		return nil, err
	}
	sums, err := t.uploadedSums(ids)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		ks := declared[id]
		slices.Sort(ks)
		o := ReportedOutput{Declared: len(ks)}
		for _, k := range ks {
			if _, ok := sums[id][k]; !ok {
				o.Missing = append(o.Missing, k)
			}
		}
		if len(o.Missing) == 0 {
			o.Digest = outputDigest(sums[id])
		}
		out[names[id]] = o
	}
	return out, nil
}
