package boincxml

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMasterFile(t *testing.T) {
	page := `<html><HEAD><Link REL="boinc_scheduler" HREF="http://a.example/cgi">
<link href='http://b.example/cgi' rel=boinc_scheduler>
<link rel="stylesheet" href="style.css"></head><body>
<!-- <SCHEDULER> http://c.example/cgi?x=1&amp;y=2 </SCHEDULER> -->
<scheduler>http://a.example/cgi</scheduler></body></html>`
	got, err := ParseMasterFile(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://a.example/cgi", "http://b.example/cgi", "http://c.example/cgi?x=1&y=2"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
}

func TestMasterFileRoundTrip(t *testing.T) {
	urls := []string{"http://127.0.0.1:8080/scheduler", "http://backup.example/scheduler?a=1&b=2"}
	got, err := ParseMasterFile(strings.NewReader(string(MasterFile("Test <project>", urls))))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(urls, got); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
}

func FuzzParseMasterFile(f *testing.F) {
	f.Add(`<scheduler>http://x/</scheduler>`)
	f.Add(`<link rel="boinc_scheduler" href="http://y/">`)
	f.Add(`<link rel=boinc_scheduler href=>`)
	f.Add(string(MasterFile("p", []string{"http://z/"})))
	f.Fuzz(func(t *testing.T, s string) {
		urls, err := ParseMasterFile(strings.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range urls {
			if u == "" {
				t.Fatal("empty URL returned")
			}
		}
	})
}
