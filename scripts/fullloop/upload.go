package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/server"
	"github.com/bkit/bkit/lib/state"
)

// The output files. bkit's emulated client (brpc) reports a finished task with a
// digest of its output and uploads nothing: it does not keep the reply's file_info.
// A project's disk fills with uploads, though, and the soak must show file deletion
// emptying upload/ (issue 27), so the driver makes the uploads a BOINC client makes
// between finishing a task and reporting it. Each job of the CPU, GPU,
// nondeterministic and B's apps declares one output file (bserver work create
// --output; the locality batch's jobs declare none). Before a client's session the
// driver uploads the file of each task the client finished (BOINC's upload
// protocol, with the permission the front end put into the reply:
// server.UploadToken of the project's key and the client's host id), then takes the
// task's digest out of the document, as a BOINC client reports none: the server
// validates on the uploaded file's digest. The file's bytes follow from the task's
// digest, so results that agree upload equal files and the nondeterministic app's
// disagreeing ones do not.
const (
	outputName  = "out"    // the open name of each job's output file
	outputBytes = 64 << 10 // the size of each uploaded output file
)

// outputFlags are bserver work create's flags for the one output file of a job.
func outputFlags() []string {
	return []string{"--output", fmt.Sprintf("%s:%d", outputName, 2*outputBytes)}
}

// uploadFigures count the output files the clients uploaded: files recorded, their
// bytes, and files the server refused for good (a result no longer in progress, or
// purged: the client gives the file up, as BOINC's does).
type uploadFigures struct {
	Files   int     `json:"files"`
	Bytes   float64 `json:"bytes"`
	Refused int     `json:"refused"`
}

// readUploadKey reads project dir's upload key, which bserver keys wrote.
func readUploadKey(dir string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, "keys", "upload_key"))
	if err != nil {
		return nil, err
	}
	return hex.DecodeString(strings.TrimSpace(string(b)))
}

// outputContent is the output file of a task whose output digest is digest.
func outputContent(digest string) []byte {
	line := digest + "\n"
	return bytes.Repeat([]byte(line), outputBytes/len(line)+1)[:outputBytes]
}

// upload uploads the output file of each task client c finished and has not
// uploaded, to the front ends of the task's project in the client's order, and
// takes the digest of those uploaded out of its document. A front end that does not
// answer, or answers "try later", leaves the file for the next step.
func (c *client) upload(ctx context.Context, l *loop) error {
	doc, err := c.read(l)
	if err != nil {
		return err
	}
	changed := false
	for i := range doc.Tasks {
		t := &doc.Tasks[i]
		if t.State != state.TaskDone || c.uploaded[t.Name] || strings.HasPrefix(t.AppVersion, "A/loc/") {
			// (The locality batch's jobs declare no output file.)
			continue
		}
		var hostID int64
		for _, p := range doc.Projects {
			if p.Name == t.Project {
				hostID = int64(p.HostID)
			}
		}
		urls, key := l.uploadURLs(c, t.Project)
		if len(key) == 0 || hostID == 0 {
			continue
		}
		digest := t.OutputDigest
		if digest == "" {
			digest = "task:" + t.Name
		}
		name := server.OutputFileName(t.Name, 0)
		data := outputContent(digest)
		status := 1
		for _, u := range urls {
			if status, err = postUpload(ctx, u, name, server.UploadToken(key, name, hostID), data); err == nil {
				break
			}
		}
		switch status {
		case 0:
			l.mu.Lock()
			l.uploads.Files++
			l.uploads.Bytes += float64(len(data))
			l.mu.Unlock()
			t.OutputDigest = ""
			c.uploaded[t.Name] = true
			changed = true
		case -1:
			l.mu.Lock()
			l.uploads.Refused++
			l.mu.Unlock()
			c.uploaded[t.Name] = true
		}
	}
	if !changed {
		return nil
	}
	data, err := state.Encode(doc, state.JSON)
	if err != nil {
		return err
	}
	return cliutil.WriteFileAtomic(c.doc, data)
}

// uploadURLs are the file upload handlers of project p for client c, in the order
// of its scheduler URLs, and the project's upload key.
func (l *loop) uploadURLs(c *client, p string) ([]string, []byte) {
	if p == "B" {
		return []string{strings.TrimSuffix(l.urlB, "scheduler") + server.UploadPath}, l.uploadKeys["B"]
	}
	i := c.index
	var urls []string
	for j := range l.urlsA {
		urls = append(urls, strings.TrimSuffix(l.urlsA[(i+j)%len(l.urlsA)], "scheduler")+server.UploadPath)
	}
	return urls, l.uploadKeys["A"]
}

var uploadStatusRE = regexp.MustCompile(`<status>(-?[0-9]+)</status>`)

// postUpload sends one file as a BOINC client does and returns the reply's status:
// 0 recorded, 1 try later, -1 refused for good. An error is a front end that did
// not answer.
func postUpload(ctx context.Context, url, name, sig string, data []byte) (int, error) {
	sum := md5.Sum(data)
	var body bytes.Buffer
	fmt.Fprintf(&body, "<data_server_request>\n<file_upload>\n<file_info>\n<name>%s</name>\n<xml_signature>\n%s\n</xml_signature>\n"+
		"<max_nbytes>%d</max_nbytes>\n</file_info>\n<nbytes>%d</nbytes>\n<md5_cksum>%s</md5_cksum>\n<offset>0</offset>\n<data>\n",
		name, sig, 2*outputBytes, len(data), hex.EncodeToString(sum[:]))
	body.Write(data)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, &body)
	if err != nil {
		return 1, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 1, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 1, err
	}
	m := uploadStatusRE.FindSubmatch(b)
	if m == nil {
		return 1, fmt.Errorf("upload of %s to %s: no status in the reply %q", name, url, b)
	}
	switch string(m[1]) {
	case "0":
		return 0, nil
	case "-1":
		return -1, nil
	}
	return 1, nil
}
