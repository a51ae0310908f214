package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/filetree"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/tempfile"
)

// UploadPath is where clients upload output files (BOINC's CGI name, which clients
// also use to tell upload URLs from download URLs).
const UploadPath = "file_upload_handler"

// DefaultMaxUploadBytes bounds one uploaded file when the project sets no bound.
const DefaultMaxUploadBytes = 1 << 30

// maxUploadHeader bounds the XML header before an upload's data.
const maxUploadHeader = 64 << 10

// uploadTimeout is how long one upload may take once its permission is checked: more
// than the scheduler's time-outs, since output files can be large. Until the check the
// scheduler's time-outs hold, so a client without a permission holds a connection no
// longer than a scheduler request.
const uploadTimeout = 30 * time.Minute

// tempPrefix starts the names of uploads' temporary files in the upload directory
// (never an output file's name: those start with a workunit's name).
const tempPrefix = ".tmp-"

// OutputFileName is the name of output file k of the result named result (BOINC's
// <OUTFILE_k/> in a result template).
func OutputFileName(result string, k int) string { return result + "_" + strconv.Itoa(k) }

// splitOutputName undoes OutputFileName.
func splitOutputName(name string) (string, int, bool) {
	i := strings.LastIndexByte(name, '_')
	if i <= 0 {
		return "", 0, false
	}
	k, err := strconv.Atoi(name[i+1:])
	if err != nil || k < 0 || strconv.Itoa(k) != name[i+1:] {
		return "", 0, false
	}
	return name[:i], k, true
}

// UploadToken is the permission to upload output file name from host hostID: an HMAC
// of both under the project's upload key. It goes to the client as the file's
// <xml_signature>, which the client sends back with the file; a token made for one
// host does not let another upload the file (BOINC signs the file_info with a key
// pair for the same purpose; one server needs no key pair). Exported for the full
// loop, whose emulated clients do not keep the reply's file_info (its driver makes
// their uploads with the project's key).
func UploadToken(key []byte, name string, hostID int64) string {
	if key == nil {
		return ""
	}
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "upload\x00%s\x00%d", name, hostID)
	return hex.EncodeToString(m.Sum(nil))
}

// serveDownload serves GET /download/NAME from the download directory, with Range
// requests (clients resume). A missing file, a directory and any name that would
// leave the directory (.., symbolic links out) are 404.
func (s *Server) serveDownload(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/download/")
	if s.Config.DownloadDir == "" || name == "" || strings.Contains(name, "\\") {
		http.NotFound(w, r)
		return
	}
	root, err := os.OpenRoot(s.Config.DownloadDir)
	if err != nil {
		s.log().Error("download directory", "err", err)
		http.Error(w, "server error", http.StatusInternalServerError)
		return
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		s.log().Warn("download refused", "remote", r.RemoteAddr, "name", name, "err", err)
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

// uploadRequest is the XML header of an upload (<data_server_request>).
type uploadRequest struct {
	XMLName     xml.Name `xml:"data_server_request"`
	GetFileSize string   `xml:"get_file_size"`
	FileUpload  *struct {
		FileInfo struct {
			Name         string  `xml:"name"`
			XMLSignature string  `xml:"xml_signature"`
			MaxNBytes    float64 `xml:"max_nbytes"`
		} `xml:"file_info"`
		NBytes float64 `xml:"nbytes"`
		MD5    string  `xml:"md5_cksum"`
		Offset float64 `xml:"offset"`
	} `xml:"file_upload"`
}

// uploadError is a refusal: permanent ones make the client give up the file (and so
// the result), transient ones make it retry later.
type uploadError struct {
	permanent bool
	msg       string
}

func (e *uploadError) Error() string { return e.msg }

func permanent(format string, args ...any) error {
	return &uploadError{true, fmt.Sprintf(format, args...)}
}
func transient(format string, args ...any) error {
	return &uploadError{false, fmt.Sprintf(format, args...)}
}

// validFileName tells whether name may be a file name in the project's directories.
func validFileName(name string) bool { return store.ValidName(name, store.MaxFileNameLen) }

// serveUpload speaks BOINC's upload protocol on POST /file_upload_handler: a
// <get_file_size> query, or a <file_upload> header followed by the file's bytes. A
// file is accepted only if it is an output file of a result in progress on the host
// the upload permission was made for, no bigger than its limit, complete and with
// the MD5 the client announced; it is written to a temporary file and renamed into
// the upload directory, so the directory never holds a partial or refused file.
func (s *Server) serveUpload(w http.ResponseWriter, r *http.Request) {
	log := s.log().With("remote", r.RemoteAddr)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	rc := http.NewResponseController(w)
	permitted := func() {
		deadline := time.Now().Add(uploadTimeout)
		rc.SetReadDeadline(deadline)
		rc.SetWriteDeadline(deadline.Add(orDefault(s.Config.WriteTimeout, DefaultWriteTimeout)))
	}
	br := bufio.NewReader(r.Body)
	extra, err := s.upload(r.Context(), br, permitted)
	var ue *uploadError
	switch {
	case err == nil:
		s.countUpload("ok")
		writeUploadReply(w, 0, extra)
	case errors.As(err, &ue):
		s.countUpload("refused")
		log.Warn("upload refused", "reason", ue.msg, "permanent", ue.permanent)
		status := 1
		if ue.permanent {
			status = -1
		}
		writeUploadReply(w, status, "<message>"+xmlEscape(ue.msg)+"</message>")
	default:
		s.countUpload("error")
		log.Error("upload failed", "err", err)
		writeUploadReply(w, 1, "<message>server error; try again later</message>")
	}
}

func xmlEscape(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

func writeUploadReply(w http.ResponseWriter, status int, extra string) {
	body := fmt.Sprintf("<data_server_reply>\n    <status>%d</status>\n", status)
	if extra != "" {
		body += "    " + extra + "\n"
	}
	body += "</data_server_reply>\n"
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.Write([]byte(body))
}

// readUploadHeader reads up to and including the line "<data>" (or to the end of a
// body without one) and parses it.
func readUploadHeader(br *bufio.Reader) (*uploadRequest, error) {
	var head bytes.Buffer
	data := false
	for head.Len() <= maxUploadHeader {
		// ReadSlice, not ReadString: a line without end must not be read whole into
		// memory before its length is checked.
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			head.Write(line)
			continue
		}
		if strings.TrimSpace(string(line)) == "<data>" {
			data = true
			break
		}
		head.Write(line)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, transient("reading the request: %v", err)
		}
	}
	if head.Len() > maxUploadHeader {
		return nil, permanent("request header longer than %d bytes", maxUploadHeader)
	}
	doc := head.String()
	if data {
		doc += "</file_upload></data_server_request>"
	}
	var req uploadRequest
	d := xml.NewDecoder(strings.NewReader(doc))
	d.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }
	if err := d.Decode(&req); err != nil {
		return nil, permanent("bad request: %v", boincxml.NamedNumberError([]byte(doc), d, err))
	}
	if req.FileUpload != nil && !data {
		return nil, permanent("missing <data> tag")
	}
	return &req, nil
}

// upload handles one upload request and returns the reply's extra element. It calls
// permitted once the upload's permission is checked, before the data is read.
func (s *Server) upload(ctx context.Context, br *bufio.Reader, permitted func()) (string, error) {
	req, err := readUploadHeader(br)
	if err != nil {
		return "", err
	}
	if s.Config.UploadDir == "" || s.Config.UploadKey == nil {
		return "", permanent("this project takes no uploads")
	}
	if req.GetFileSize != "" {
		// Partial files are never kept (see upload), so a client resumes from 0
		// unless the whole file was uploaded and recorded.
		name := strings.TrimSpace(req.GetFileSize)
		size := 0.0
		if result, k, ok := splitOutputName(name); ok && validFileName(name) {
			err := s.Store.InTx(ctx, func(tx *store.Tx) error {
				t, err := tx.OutputFile(result, k)
				if err == nil && t.Complete {
					size = t.NBytes
				}
				if errors.Is(err, store.ErrNotFound) {
					err = nil
				}
				return err
			})
			if err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("<file_size>%.0f</file_size>", size), nil
	}
	fu := req.FileUpload
	if fu == nil {
		return "", permanent("bad request: want <get_file_size> or <file_upload>")
	}
	name := strings.TrimSpace(fu.FileInfo.Name)
	if name == "" {
		return "", permanent("missing name")
	}
	result, k, ok := splitOutputName(name)
	if !validFileName(name) || !ok {
		return "", permanent("%s: not an output file name", name)
	}
	var target *store.UploadTarget
	err = s.Store.InTx(ctx, func(tx *store.Tx) error {
		target, err = tx.OutputFile(result, k)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return "", permanent("%s: no result has this output file", name)
	}
	if err != nil {
		return "", err
	}
	want := UploadToken(s.Config.UploadKey, name, target.HostID)
	if target.HostID == 0 || !hmac.Equal([]byte(strings.TrimSpace(fu.FileInfo.XMLSignature)), []byte(want)) {
		return "", permanent("%s: invalid signature (not a file of a result sent to this host)", name)
	}
	if err := uploadable(target, name, result); err != nil {
		return "", err
	}
	permitted()
	if target.Complete {
		// As BOINC's handler answers for a file it made read-only: the client may
		// have missed the reply to its upload; the file stays as it is.
		s.log().Info("upload of a complete file: kept as it is", "name", name)
		return "", nil
	}
	limit := min(target.MaxNBytes, float64(orDefault(s.Config.MaxUploadBytes, DefaultMaxUploadBytes)))
	switch {
	case !(fu.NBytes >= 0):
		return "", permanent("%s: nbytes missing or negative", name)
	case fu.NBytes > limit:
		return "", permanent("%s: file size (%.0f bytes) exceeds limit (%.0f bytes)", name, fu.NBytes, limit)
	case fu.Offset != 0:
		return "", permanent("%s: offset %.0f: this server takes whole files only (its get_file_size says 0)", name, fu.Offset)
	}
	tmp, f, err := s.receive(br, name, int64(fu.NBytes), strings.ToLower(strings.TrimSpace(fu.MD5)))
	if err != nil {
		return "", err
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name()) // when it was not renamed: a refusal, a failure
	}()
	f.ResultID, f.FileNum = target.ResultID, k
	// Its place in the fan-out tree (lib/filetree: BOINC's upload hierarchy), so no
	// directory holds millions of files.
	final := filepath.Join(s.Config.UploadDir, filetree.Path(name))
	err = s.Store.InTx(ctx, func(tx *store.Tx) error {
		// Again, with the result locked until the file is recorded: a report or
		// another upload of this file since the first look must win or wait.
		t, err := tx.LockOutputFile(target.ResultID, k)
		if err != nil {
			return err
		}
		if t.HostID != target.HostID {
			return permanent("%s: result %s is no longer this host's", name, result)
		}
		if err := uploadable(t, name, result); err != nil {
			return err
		}
		if t.Complete {
			return errComplete
		}
		// No row, and the lock held: whatever is under the name is not a recorded
		// upload (a server killed between rename and commit), and is replaced.
		if err := placeFile(tmp, final); err != nil {
			return err
		}
		return tx.RecordUpload(*f)
	})
	if errors.Is(err, errComplete) {
		s.log().Info("upload of a file another upload completed meanwhile: kept as it is", "name", name)
		return "", nil
	}
	if err == nil {
		s.countUploadBytes(fu.NBytes)
	}
	return "", err
}

// errComplete: the file was recorded by another upload since the first look.
var errComplete = errors.New("output file complete")

// uploadable refuses an upload to a result that is not in progress: reported (its
// files are what the validator judges) or never sent. A result that timed out may
// still be reported late, so its files are taken.
func uploadable(t *store.UploadTarget, name, result string) error {
	if !(t.ServerState == store.ServerStateInProgress ||
		t.ServerState == store.ServerStateOver && t.Outcome == store.OutcomeNoReply) {
		return permanent("%s: result %s is not in progress", name, result)
	}
	return nil
}

// placeFile renames the received file tmp to final and syncs the directory. It may
// run again when the recording transaction is retried: a file already renamed is left.
func placeFile(tmp *os.File, final string) error {
	mine, err := tmp.Stat()
	if err != nil {
		return err
	}
	if fi, err := os.Stat(final); err == nil && os.SameFile(fi, mine) {
		return nil
	}
	dir := filepath.Dir(final)
	if _, err := os.Stat(dir); err != nil {
		// A new directory of the fan-out tree (made at the first file it holds).
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		syncDir(filepath.Dir(dir))
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return err
	}
	syncDir(dir)
	syncDir(filepath.Dir(tmp.Name()))
	return nil
}

// syncDir makes a directory's entries (a rename into it, a new subdirectory) durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// receive copies n bytes of the body to a temporary file in the upload directory and
// checks them; the caller renames the file (placeFile) or removes it.
func (s *Server) receive(body io.Reader, name string, n int64, wantMD5 string) (*os.File, *store.UploadedFile, error) {
	// Locked while it lives (lib/tempfile), so a sweep (SweepUploads) tells the
	// files of a killed server from those of uploads in progress, in any process.
	f, err := tempfile.Create(s.Config.UploadDir, tempPrefix+"*-"+name)
	if err != nil {
		return nil, nil, err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, nil, err
	}
	fail := func(err error) (*os.File, *store.UploadedFile, error) {
		f.Close()
		os.Remove(f.Name())
		return nil, nil, err
	}
	m5, s256 := md5.New(), sha256.New()
	got, err := io.Copy(io.MultiWriter(f, m5, s256), io.LimitReader(body, n))
	if err != nil || got < n {
		return fail(transient("%s: upload cut off after %d of %d bytes", name, got, n))
	}
	sum := hexSum(m5)
	if wantMD5 != "" && wantMD5 != sum {
		return fail(transient("%s: MD5 %s of the data received differs from the client's %s", name, sum, wantMD5))
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	return f, &store.UploadedFile{Name: name, NBytes: float64(n), MD5: sum, SHA256: hexSum(s256), UploadTime: s.now()}, nil
}

// SweepUploads removes the temporary files of uploads that no live process is
// receiving (a server killed mid-upload leaves its file) from the upload directory,
// and returns how many it removed. Serve sweeps at start and every
// Config.UploadSweepInterval; uploads in progress, in this process or another sharing
// the directory, hold a lock on theirs and are left alone.
func (s *Server) SweepUploads() (int, error) {
	if s.Config.UploadDir == "" {
		return 0, nil
	}
	return tempfile.RemoveOrphans(s.Config.UploadDir, func(name string) bool { return strings.HasPrefix(name, tempPrefix) })
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }
