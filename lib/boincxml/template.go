package boincxml

import (
	"encoding/xml"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// TemplateOutput is an output file a BOINC result template describes.
type TemplateOutput struct {
	OpenName  string
	MaxNBytes float64
}

// outfileRE is compiled when first used, not as every program starts.
var outfileRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^<OUTFILE_([0-9]{1,3})\s*/>$`) })

// ParseResultTemplate reads a BOINC result template: <file_info> elements named
// <OUTFILE_k/> with <max_nbytes>, and a <result> whose <file_ref>s give each
// <OUTFILE_k/> its <open_name>. It returns the outputs in file number order, which
// must run 0, 1, … without gaps. Tags bkit has no use for (<url>, <generated_locally/>,
// <upload_when_present/>, <copy_file/>) are skipped: bkit always uploads outputs to
// its own handler when present.
func ParseResultTemplate(b []byte) ([]TemplateOutput, error) {
	type fileInfo struct {
		Name struct {
			Inner string `xml:",innerxml"`
		} `xml:"name"`
		MaxNBytes string `xml:"max_nbytes"`
	}
	type fileRef struct {
		FileName struct {
			Inner string `xml:",innerxml"`
		} `xml:"file_name"`
		OpenName string `xml:"open_name"`
	}
	var doc struct {
		FileInfos []fileInfo `xml:"file_info"`
		Result    struct {
			FileRefs []fileRef `xml:"file_ref"`
		} `xml:"result"`
	}
	if err := xml.Unmarshal([]byte("<t>"+string(b)+"</t>"), &doc); err != nil {
		return nil, fmt.Errorf("result template: %v", err)
	}
	num := func(what, inner string) (int, error) {
		m := outfileRE().FindStringSubmatch(strings.TrimSpace(inner))
		if m == nil {
			return 0, fmt.Errorf("result template: %s: want <OUTFILE_k/>, got %q", what, strings.TrimSpace(inner))
		}
		return strconv.Atoi(m[1])
	}
	outs := make([]TemplateOutput, len(doc.FileInfos))
	seen := make([]bool, len(outs))
	for _, fi := range doc.FileInfos {
		k, err := num("file_info.name", fi.Name.Inner)
		if err != nil {
			return nil, err
		}
		if k >= len(outs) || seen[k] {
			return nil, fmt.Errorf("result template: file_info <OUTFILE_%d/>: file numbers must run 0 to %d, each once", k, len(outs)-1)
		}
		seen[k] = true
		v, err := strconv.ParseFloat(strings.TrimSpace(fi.MaxNBytes), 64)
		if err != nil || !(v > 0) || v > 1<<40 {
			return nil, fmt.Errorf("result template: file_info <OUTFILE_%d/>: max_nbytes: want a number of bytes > 0, got %q", k, fi.MaxNBytes)
		}
		outs[k].MaxNBytes = v
	}
	for _, fr := range doc.Result.FileRefs {
		k, err := num("result.file_ref.file_name", fr.FileName.Inner)
		if err != nil {
			return nil, err
		}
		if k >= len(outs) {
			return nil, fmt.Errorf("result template: file_ref <OUTFILE_%d/> has no file_info", k)
		}
		outs[k].OpenName = strings.TrimSpace(fr.OpenName)
	}
	for k, o := range outs {
		if o.OpenName == "" {
			return nil, fmt.Errorf("result template: <OUTFILE_%d/>: no <result><file_ref> gives it an <open_name>", k)
		}
	}
	if len(outs) == 0 {
		return nil, errors.New("result template: no <file_info>")
	}
	return outs, nil
}
