package server

import (
	"bufio"
	"strings"
	"testing"
)

// TestUploadHeaderNumbers: a number in the upload header that does not parse or is out
// of range is refused naming its element, not with strconv's message (issue 28 item 13).
func TestUploadHeaderNumbers(t *testing.T) {
	for _, c := range []struct{ field, want string }{
		{"<nbytes>1e400</nbytes>", `bad request: file_upload.nbytes: want a number in range, got "1e400"`},
		{"<offset>zero</offset>", `bad request: file_upload.offset: want a number, got "zero"`},
		{"<file_info><name>r_0</name><max_nbytes>1e999</max_nbytes></file_info>", `bad request: file_upload.file_info.max_nbytes: want a number in range`},
	} {
		head := "<data_server_request><core_client_major_version>7</core_client_major_version><file_upload>" + c.field + "<data>\n"
		_, err := readUploadHeader(bufio.NewReader(strings.NewReader(head)))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.field, err, c.want)
		}
	}
}
