package server

import (
	"bufio"
	"strconv"
	"strings"
	"testing"
)

// FuzzUploadHeader: the upload handler's header reader never panics, and what it
// accepts as an upload has a <data> line.
func FuzzUploadHeader(f *testing.F) {
	f.Add("<data_server_request>\n<file_upload>\n<file_info>\n<name>r_0</name>\n<xml_signature>\nab\n</xml_signature>\n<max_nbytes>10</max_nbytes>\n</file_info>\n<nbytes>3</nbytes>\n<md5_cksum>x</md5_cksum>\n<offset>0</offset>\n<data>\nabc")
	f.Add("<data_server_request>\n<get_file_size>r_0</get_file_size>\n</data_server_request>\n")
	f.Add("<data_server_request><file_upload>")
	f.Fuzz(func(t *testing.T, s string) {
		req, err := readUploadHeader(bufio.NewReader(strings.NewReader(s)))
		if err == nil && req.FileUpload != nil && !strings.Contains(s, "<data>") {
			t.Fatalf("an upload without <data> accepted: %q", s)
		}
	})
}

func TestSplitOutputName(t *testing.T) {
	for name, want := range map[string]string{"wu_1_0_0": "wu_1_0/0", "wu_1_0_12": "wu_1_0/12", "x_01": "", "_0": "", "abc": "", "a_-1": ""} {
		r, k, ok := splitOutputName(name)
		got := ""
		if ok {
			got = r + "/" + strconv.Itoa(k)
		}
		if got != want {
			t.Errorf("splitOutputName(%q) = %q, want %q", name, got, want)
		}
	}
}
