package server

import (
	"bufio"
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
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

// FuzzUserName: what create_account.php accepts as a user name has none of BOINC's
// refusals: no leading or trailing white space, no HTML special or control
// characters, valid UTF-8 of at most 254 bytes, not a number.
func FuzzUserName(f *testing.F) {
	for _, s := range []string{"Alice", " Bob", "12", "1e3", "a<b", "Zoë", "\xc3\x28", "NaN", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if badUserName(name) != "" {
			return
		}
		_, numErr := strconv.ParseFloat(name, 64)
		if numErr == nil && !strings.ContainsAny(name, "0123456789") {
			numErr = errors.New("NaN or Inf: a name")
		}
		if name == "" || strings.TrimSpace(name) != name || strings.ContainsAny(name, "'\"<>&") || !utf8.ValidString(name) ||
			len(name) > 254 || numErr == nil || strings.ContainsFunc(name, func(c rune) bool { return c < 32 || c == 127 }) {
			t.Fatalf("accepted %q", name)
		}
	})
}
