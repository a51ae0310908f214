package boincxml

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const resultTemplate = `
<file_info>
    <name><OUTFILE_0/></name>
    <generated_locally/>
    <upload_when_present/>
    <max_nbytes>5000000</max_nbytes>
    <url><UPLOAD_URL/></url>
</file_info>
<file_info>
    <name><OUTFILE_1/></name>
    <max_nbytes>1000</max_nbytes>
</file_info>
<result>
    <file_ref>
        <file_name><OUTFILE_0/></file_name>
        <open_name>out</open_name>
        <copy_file/>
    </file_ref>
    <file_ref>
        <file_name><OUTFILE_1/></file_name>
        <open_name>log</open_name>
    </file_ref>
</result>
`

func TestParseResultTemplate(t *testing.T) {
	got, err := ParseResultTemplate([]byte(resultTemplate))
	if err != nil {
		t.Fatal(err)
	}
	want := []TemplateOutput{{OpenName: "out", MaxNBytes: 5e6}, {OpenName: "log", MaxNBytes: 1000}}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatal(d)
	}
	for _, bad := range []struct{ doc, msg string }{
		{``, "result template: no <file_info>"},
		{`<file_info><name><OUTFILE_1/></name><max_nbytes>1</max_nbytes></file_info>`, "result template: file_info <OUTFILE_1/>: file numbers must run 0 to 0, each once"},
		{`<file_info><name>x</name></file_info>`, `result template: file_info.name: want <OUTFILE_k/>, got "x"`},
		{`<file_info><name><OUTFILE_0/></name><max_nbytes>-1</max_nbytes></file_info>`, `result template: file_info <OUTFILE_0/>: max_nbytes: want a number of bytes > 0, got "-1"`},
		{`<file_info><name><OUTFILE_0/></name><max_nbytes>10</max_nbytes></file_info>`, `result template: <OUTFILE_0/>: no <result><file_ref> gives it an <open_name>`},
		{`<file_info>`, "result template: XML syntax error on line 1: element <file_info> closed by </t>"},
	} {
		if _, err := ParseResultTemplate([]byte(bad.doc)); err == nil || err.Error() != bad.msg {
			t.Errorf("%q: got %v, want %s", bad.doc, err, bad.msg)
		}
	}
}

func FuzzParseResultTemplate(f *testing.F) {
	f.Add([]byte(resultTemplate))
	f.Fuzz(func(t *testing.T, b []byte) {
		outs, err := ParseResultTemplate(b)
		if err == nil {
			for _, o := range outs {
				if o.OpenName == "" || !(o.MaxNBytes > 0) {
					t.Fatalf("accepted an output without a name or limit: %+v", o)
				}
			}
		}
	})
}
