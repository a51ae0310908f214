package boincxml

import (
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/bkit/bkit/lib/limits"
)

// TestSizeLimits: every reader of outside input refuses an input over its limit, with a
// message naming the input and the limit, instead of reading without end (issue 18).
func TestSizeLimits(t *testing.T) {
	pad := func(root string, n int) string {
		return "<" + root + ">" + strings.Repeat(" ", n) + "</" + root + ">"
	}
	check := func(what string, err error, name string) {
		t.Helper()
		if !limits.IsTooLarge(err) || !strings.HasPrefix(err.Error(), name+": larger than ") {
			t.Errorf("%s: err = %v, want %s: larger than …", what, err, name)
		}
	}
	_, err := ImportClientState(limits.NewReader(strings.NewReader(pad("client_state", 5000)), "cs.xml", 1000), "cs.xml")
	check("client_state.xml", err, "cs.xml")
	_, err = ReadGlobalPrefs(limits.NewReader(strings.NewReader(pad("global_preferences", 5000)), "gp.xml", 1000), "gp.xml")
	check("global_prefs.xml", err, "gp.xml")
	_, err = ParseMasterFile(strings.NewReader(pad("html", int(MaxMasterFileBytes))))
	check("master file", err, "master file")
	_, err = ParseSchedulerReply(strings.NewReader(pad("scheduler_reply", int(limits.SchedulerReplyBytes))))
	check("scheduler reply", err, "scheduler reply")
	_, err = ParseSchedulerRequest(strings.NewReader(pad("scheduler_request", int(MaxRequestBytes))))
	check("scheduler request", err, "scheduler request")
	fsys := fstest.MapFS{"client_state.xml": {Data: []byte(pad("client_state", 5000))}}
	_, err = readScenario(fsys, "sc", 1000)
	check("scenario directory", err, "sc/client_state.xml")
	cs, err := os.ReadFile("../sim/testdata/noisy/client_state.xml")
	if err != nil {
		t.Fatal(err)
	}
	fsys = fstest.MapFS{"client_state.xml": {Data: cs}, "cc_config.xml": {Data: []byte(pad("cc_config", len(cs)+10))}}
	_, err = readScenario(fsys, "sc", int64(len(cs)))
	check("cc_config.xml", err, "sc/cc_config.xml")
	// Just under the limit still reads.
	if _, err := ParseMasterFile(strings.NewReader(pad("html", int(MaxMasterFileBytes)-20))); err != nil {
		t.Errorf("master file under the limit: %v", err)
	}
}
