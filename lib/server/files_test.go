package server_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/filetree"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/store"
	"github.com/bkit/bkit/lib/store/storetest"
)

const linux = "x86_64-pc-linux-gnu"

// fileEnv is a server with a signed app version for linux, workunits with an input
// file and a 100-byte output, and a user.
type fileEnv struct {
	*env
	download, upload string
	key              string // the user's account key
}

func startFiles(t testing.TB, dsn string, opts ...func(*server.Config)) *fileEnv {
	t.Helper()
	dir := t.TempDir()
	fe := &fileEnv{download: filepath.Join(dir, "download"), upload: filepath.Join(dir, "upload")}
	os.MkdirAll(fe.download, 0o755)
	os.MkdirAll(fe.upload, 0o755)
	os.WriteFile(filepath.Join(fe.download, "app_1_linux"), []byte("#!/bin/sh\nexit 0\n"), 0o644)
	os.WriteFile(filepath.Join(fe.download, "input_a"), []byte("0123456789"), 0o644)
	os.WriteFile(filepath.Join(dir, "secret"), []byte("SECRET"), 0o644)
	os.Symlink(filepath.Join(dir, "secret"), filepath.Join(fe.download, "link_out"))
	cfg := server.Config{DownloadDir: fe.download, UploadDir: fe.upload, UploadKey: []byte("0123456789abcdef0123456789abcdef"),
		CodeSignKey: "1024\nabcdef\n.\n"}
	for _, o := range opts {
		o(&cfg)
	}
	fe.env = start(t, dsn, cfg, 0)
	ctx := context.Background()
	st := fe.st
	if _, err := st.AddApp(ctx, "fileapp", false, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddAppVersion(ctx, store.AppVersion{AppName: "fileapp", VersionNum: 1, Platform: linux, AvgNCPUs: 1,
		Files: []store.AppVersionFile{{Name: "app_1_linux", OpenName: "app", MainProgram: true, NBytes: 17, MD5: "m", Signature: "5151"}}}, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateWork(ctx, store.WorkSpec{App: "fileapp", Count: 4, FpopsEst: 1e9, DelayBound: 1000, MinQuorum: 1, TargetNResults: 1,
		MaxErrorResults: 3, MaxTotalResults: 5, MaxSuccessResults: 3,
		Inputs:  []store.WUFile{{Name: "input_a", OpenName: "in", NBytes: 10, MD5: "x"}},
		Outputs: []store.WUOutput{{OpenName: "out", MaxNBytes: 100}}}, 1); err != nil {
		t.Fatal(err)
	}
	u, err := st.AddUser(ctx, "alice", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	fe.key = u.Authenticator
	return fe
}

// boincRequest is a first request as a BOINC client sends it: account key, host id 0.
func boincRequest(key string, hostID int64, platform string) *boincxml.SchedulerRequest {
	return &boincxml.SchedulerRequest{Authenticator: key, HostID: hostID, PlatformName: platform,
		CPUReqSecs: 1, CPUReqInstances: 0, WorkReqSeconds: 1, HostInfo: boincxml.HostInfo{PNCPUs: 1, PFpops: 1e9}}
}

// uploadReq posts an upload as a BOINC client does and returns the reply.
func uploadReq(t testing.TB, url, name, sig string, nbytes int, data []byte) string {
	t.Helper()
	sum := md5.Sum(data)
	body := fmt.Sprintf("<data_server_request>\n    <core_client_major_version>7</core_client_major_version>\n<file_upload>\n<file_info>\n"+
		"<name>%s</name>\n<xml_signature>\n%s\n</xml_signature>\n<max_nbytes>100</max_nbytes>\n</file_info>\n"+
		"<nbytes>%d</nbytes>\n<md5_cksum>%s</md5_cksum>\n<offset>0</offset>\n<data>\n%s", name, sig, nbytes, hex.EncodeToString(sum[:]), data)
	resp, err := http.Post(url+"file_upload_handler", "application/x-www-form-urlencoded", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

var statusRE = regexp.MustCompile(`<status>(-?[0-9]+)</status>`)

func uploadStatus(reply string) string {
	if m := statusRE.FindStringSubmatch(reply); m != nil {
		return m[1]
	}
	return "none"
}

func TestAccountsFilesUploads(t *testing.T) {
	t.Parallel()
	for _, eng := range storetest.Engines(t) {
		t.Run(eng.Name, func(t *testing.T) {
			eng.Require(t)
			t.Parallel()
			fe := startFiles(t, eng.DSN)

			// A BOINC client's first request with the account key: a new host of alice,
			// the code-signing key, the app version's signed file, the job's input and
			// its output with an upload permission.
			repA, _ := fe.post(t, boincRequest(fe.key, 0, linux))
			if repA.HostID == 0 || repA.UserName != "alice" || repA.HostVenue == nil || repA.CodeSignKey == nil || len(repA.ResultsSent) != 1 {
				t.Fatalf("first reply: hostid %d, user %q, venue %v, key %v, %d jobs; messages %v", repA.HostID, repA.UserName, repA.HostVenue,
					repA.CodeSignKey, len(repA.ResultsSent), repA.Messages)
			}
			av := repA.AppVersions[0]
			if av.Platform != linux || len(av.FileRefs) != 1 || av.FileRefs[0].FileName != "app_1_linux" || !av.FileRefs[0].MainProgram {
				t.Fatalf("app version: %+v", av)
			}
			files := map[string]boincxml.ReplyFileInfo{}
			for _, f := range repA.FileInfos {
				files[f.Name] = f
			}
			resA := repA.ResultsSent[0]
			outA := resA.Name + "_0"
			if f := files["app_1_linux"]; f.FileSignature != "5151" || !f.Executable || f.URL != fe.url+"download/app_1_linux" {
				t.Fatalf("app file info: %+v", f)
			}
			if f := files[outA]; f.URL != fe.url+"file_upload_handler" || f.MaxNBytes != 100 || f.XMLSignature == "" {
				t.Fatalf("output file info: %+v", f)
			}
			if len(resA.FileRefs) != 1 || resA.FileRefs[0].OpenName != "out" || repA.Workunits[0].FileRefs[0].OpenName != "in" {
				t.Fatalf("file refs: result %+v, workunit %+v", resA.FileRefs, repA.Workunits[0].FileRefs)
			}
			// The next request presents the host id and the account key; the client now
			// holds the key, so it is not sent again.
			req := boincRequest(fe.key, repA.HostID, linux)
			req.CodeSignKey = "1024\nabcdef\n.\n"
			if rep, _ := fe.post(t, req); rep.CodeSignKey != nil || rep.UserName != "alice" || len(rep.Messages) != 0 {
				t.Fatalf("second request: key %v, user %q, messages %v", rep.CodeSignKey, rep.UserName, rep.Messages)
			}
			// Another platform gets no job of the linux version.
			if rep, _ := fe.post(t, boincRequest(fe.key, 0, "windows_x86_64")); len(rep.ResultsSent) != 0 {
				t.Fatalf("a windows host got %d jobs of a linux version", len(rep.ResultsSent))
			}
			repB, _ := fe.post(t, boincRequest(fe.key, 0, linux))
			if len(repB.ResultsSent) != 1 || repB.HostID == repA.HostID {
				t.Fatalf("host B: hostid %d, %d jobs", repB.HostID, len(repB.ResultsSent))
			}
			sigA := files[outA].XMLSignature
			var sigB string
			for _, f := range repB.FileInfos {
				if f.Name == repB.ResultsSent[0].Name+"_0" {
					sigB = f.XMLSignature
				}
			}
			users, _ := fe.st.Users(context.Background())
			if len(users) != 1 || users[0].Hosts != 3 {
				t.Fatalf("users: %+v", users)
			}

			// Refusals: nothing is written.
			for _, c := range []struct {
				what, name, sig string
				nbytes          int
				data            string
				status          string
			}{
				{"too big", outA, sigA, 101, strings.Repeat("x", 101), "-1"},
				{"unknown result", "nosuch_1_0_0", sigA, 5, "hello", "-1"},
				{"not an output name", "../../etc/passwd", sigA, 5, "hello", "-1"},
				{"another host's", outA, sigB, 5, "hello", "-1"},
				{"no signature", outA, "", 5, "hello", "-1"},
				{"truncated", outA, sigA, 50, "only part", "1"},
			} {
				reply := uploadReq(t, fe.url, c.name, c.sig, c.nbytes, []byte(c.data))
				if uploadStatus(reply) != c.status {
					t.Errorf("%s: status %s, want %s: %s", c.what, uploadStatus(reply), c.status, reply)
				}
				if files := treeFiles(t, fe.upload); len(files) != 0 {
					t.Fatalf("%s: the upload directory holds %v", c.what, files)
				}
			}
			// The right host's upload is written, and its digests recorded.
			if reply := uploadReq(t, fe.url, outA, sigA, 5, []byte("HELLO")); uploadStatus(reply) != "0" {
				t.Fatalf("good upload: %s", reply)
			}
			// It lands in the fan-out tree (BOINC's upload hierarchy), not the flat directory.
			if b, err := os.ReadFile(filepath.Join(fe.upload, filetree.Path(outA))); err != nil || string(b) != "HELLO" {
				t.Fatalf("uploaded file: %q, %v", b, err)
			}
			if files := treeFiles(t, fe.upload); len(files) != 1 || files[0] != filetree.Path(outA) {
				t.Fatalf("the upload directory holds %v, want only %s", files, filetree.Path(outA))
			}
			up, err := fe.st.UploadedFiles(context.Background())
			if err != nil || len(up) != 1 || up[0].Name != outA || up[0].NBytes != 5 || up[0].MD5 != "eb61eead90e3b899c6bcbe27ac581660" {
				t.Fatalf("uploaded files: %+v, %v", up, err)
			}
			// The digest the validator compares: the file's SHA-256.
			var digest string
			if err := fe.st.InTx(context.Background(), func(tx *store.Tx) (err error) {
				digest, err = tx.OutputDigest(resA.Name)
				return err
			}); err != nil || digest != "sha256:3733cd977ff8eb18b987357e22ced99f46097f31ecb239e878ae63760e83e4d5" {
				t.Fatalf("output digest %q, %v", digest, err)
			}
			// A BOINC client reports with no digest of its own: the server records the
			// digest of what it uploaded, for the validator. Host B's success, with
			// nothing uploaded, is a validate error (issue 28).
			for _, c := range []struct {
				host    int64
				result  string
				want    string
				outcome int
			}{{repA.HostID, resA.Name, digest, store.OutcomeSuccess}, {repB.HostID, repB.ResultsSent[0].Name, "", store.OutcomeValidateError}} {
				req := boincRequest(fe.key, c.host, linux)
				req.WorkReqSeconds, req.CPUReqSecs = 0, 0
				req.Results = []boincxml.ReportedResult{{Name: c.result, FinalCPUTime: 1, FinalElapsedTime: 1, State: boincxml.ResultFilesUploaded}}
				if rep, _ := fe.post(t, req); len(rep.ResultAcks) != 1 {
					t.Fatalf("report %s: acks %v, messages %v", c.result, rep.ResultAcks, rep.Messages)
				}
				var got string
				var outcome int
				if err := fe.st.DB.QueryRow(`SELECT output_digest, outcome FROM result WHERE name=?`, c.result).Scan(&got, &outcome); err != nil ||
					got != c.want || outcome != c.outcome {
					t.Errorf("report %s: recorded digest %q, outcome %d (%v); want %q, %d", c.result, got, outcome, err, c.want, c.outcome)
				}
			}
			// get_file_size: the whole file when it is here, else 0.
			for name, want := range map[string]string{outA: "5", "nosuch_1_0_0": "0"} {
				resp, err := http.Post(fe.url+"file_upload_handler", "text/xml", strings.NewReader(
					"<data_server_request>\n<get_file_size>"+name+"</get_file_size>\n</data_server_request>\n"))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !strings.Contains(string(b), "<file_size>"+want+"</file_size>") || uploadStatus(string(b)) != "0" {
					t.Errorf("get_file_size %s: %s", name, b)
				}
			}
		})
	}
}

func TestDownload(t *testing.T) {
	t.Parallel()
	fe := startFiles(t, storetest.SQLiteDSN(t))
	get := func(path, rng string) (int, string) {
		req, _ := http.NewRequest("GET", fe.url+path, nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("download/input_a", ""); code != 200 || body != "0123456789" {
		t.Fatalf("download: %d %q", code, body)
	}
	// Clients resume with Range requests.
	if code, body := get("download/input_a", "bytes=4-"); code != 206 || body != "456789" {
		t.Fatalf("range: %d %q", code, body)
	}
	for _, p := range []string{"download/nosuch", "download/", "download/link_out", "download/%2e%2e/secret", "download/..%2fsecret", "download/../secret"} {
		code, body := get(p, "")
		if code == 200 || strings.Contains(body, "SECRET") {
			t.Errorf("%s: status %d, body %q: want a refusal", p, code, body)
		}
	}
	if code, _ := get("download/link_out", ""); code != 404 {
		t.Errorf("a symbolic link out of the directory: status %d, want 404", code)
	}
}

// BenchmarkUpload1MB measures output uploads per second on loopback with SQLite: 4
// uploaders at once, each upload a 1 MB file of a result sent to the uploading host,
// checked, written under a temporary name, synced, renamed and recorded. It reports
// uploads/s and MB/s (scripts/bench-bserver.sh prints them).
func BenchmarkUpload1MB(b *testing.B) {
	const size, uploaders = 1 << 20, 4
	fe := startFiles(b, storetest.SQLiteDSN(b))
	ctx := context.Background()
	if _, err := fe.st.CreateWork(ctx, store.WorkSpec{App: "fileapp", Count: b.N, FpopsEst: 1e9, DelayBound: 1000, MinQuorum: 1, TargetNResults: 1,
		MaxErrorResults: 3, MaxTotalResults: 5, MaxSuccessResults: 3, Outputs: []store.WUOutput{{OpenName: "out", MaxNBytes: 2 * size}}}, 1); err != nil {
		b.Fatal(err)
	}
	// One host takes every job: no quota on jobs in progress or a day (0: no limit; the
	// defaults stopped it after 6, issue 27's quotas).
	zero := 0
	if _, err := fe.st.SetAppRetry(ctx, "fileapp", store.AppRetrySet{DailyQuota: &zero, MaxInProgress: &zero}); err != nil {
		b.Fatal(err)
	}
	type job struct{ name, sig string }
	var jobs []job
	var hostID int64
	for len(jobs) < b.N {
		req := boincRequest(fe.key, hostID, linux)
		req.CPUReqInstances = 100
		rep, _ := fe.post(b, req)
		if rep.HostID != 0 {
			hostID = rep.HostID
		}
		if len(rep.ResultsSent) == 0 {
			b.Fatalf("no jobs after %d: %v", len(jobs), rep.Messages)
		}
		for _, fi := range rep.FileInfos {
			if fi.MaxNBytes == 2*size {
				jobs = append(jobs, job{fi.Name, fi.XMLSignature})
			}
		}
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	work := make(chan job, len(jobs))
	for _, j := range jobs[:b.N] {
		work <- j
	}
	close(work)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range uploaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				if r := uploadReq(b, fe.url, j.name, j.sig, size, data); uploadStatus(r) != "0" {
					b.Errorf("upload %s: %s", j.name, r)
					return
				}
			}
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	b.ReportMetric(float64(b.N)/secs, "uploads/s")
	b.ReportMetric(float64(b.N)*size/1e6/secs, "MB/s")
}

// treeFiles lists the regular files under dir, relative to it, sorted.
func treeFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}
