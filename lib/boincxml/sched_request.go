package boincxml

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bkit/bkit/lib/limits"
)

// ResourceCPU is the name of the CPU processing resource; coprocessors are named by
// their type (NVIDIA, ATI, intel_gpu, or whatever a <coproc><type> says).
const ResourceCPU = "cpu"

// SchedulerRequest is the body of a scheduler RPC: <scheduler_request>. Field names
// follow BOINC's tags (see ../shared/scheduler-protocol.md); tags not listed here are
// skipped when parsing.
type SchedulerRequest struct {
	XMLName xml.Name `xml:"scheduler_request"`

	// Identity. Authenticator is empty and HostID 0 on a host's first contact.
	Authenticator string `xml:"authenticator"`
	HostID        int64  `xml:"hostid"`
	RPCSeqno      int64  `xml:"rpc_seqno"`
	PlatformName  string `xml:"platform_name,omitempty"`
	// CodeSignKey is the project's code-signing key the client holds, if any: the
	// scheduler sends its key only to a client that lacks it.
	CodeSignKey string `xml:"code_sign_key,omitempty"`
	// AltPlatforms are the other platforms the host runs (BOINC's <alt_platform>).
	AltPlatforms           []NameRef `xml:"alt_platform,omitempty"`
	CoreClientMajorVersion int       `xml:"core_client_major_version,omitempty"`
	CoreClientMinorVersion int       `xml:"core_client_minor_version,omitempty"`
	CoreClientRelease      int       `xml:"core_client_release,omitempty"`

	// Work request (seed 002). WorkReqSeconds is the largest per-resource request, kept
	// for old servers; a request with only WorkReqSeconds comes from an old client.
	WorkReqSeconds  float64 `xml:"work_req_seconds"`
	CPUReqSecs      float64 `xml:"cpu_req_secs"`
	CPUReqInstances float64 `xml:"cpu_req_instances"`
	EstimatedDelay  float64 `xml:"estimated_delay"`
	// Coprocs carries the per-coprocessor requests (req_secs, req_instances).
	Coprocs Coprocs `xml:"coprocs,omitempty"`

	ResourceShareFraction float64    `xml:"resource_share_fraction,omitempty"`
	TimeStats             *TimeStats `xml:"time_stats,omitempty"`
	HostInfo              HostInfo   `xml:"host_info"`

	Results []ReportedResult `xml:"result"`
	// OtherResults are the tasks of the project the client holds besides those it
	// reports. nil: the request has no <other_results> (bkit's clients leave it out
	// when they hold none); non-nil, even empty: the client listed every task it holds
	// (BOINC clients always send the list), so the scheduler may resend the others.
	OtherResults OtherResultList `xml:"other_results"`
	// FileInfos are the sticky files the host holds (locality scheduling, seed 004).
	FileInfos []NameRef `xml:"file_info,omitempty"`
}

// OtherResultList is the <other_results> list: non-nil once the element is read,
// however many <other_result>s it holds.
type OtherResultList []NameRef

// UnmarshalXML reads <other_results>, leaving a non-nil list even when it is empty.
func (l *OtherResultList) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	var v struct {
		Items []NameRef `xml:"other_result"`
	}
	if err := d.DecodeElement(&v, &start); err != nil {
		return err
	}
	*l = append(OtherResultList{}, v.Items...)
	return nil
}

// MarshalXML writes <other_results> with one <other_result> per task: an empty
// element for an empty list (a BOINC client that holds no task says so, and the
// scheduler resends what it lost), nothing for a nil one.
func (l OtherResultList) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	if l == nil {
		return nil
	}
	v := struct {
		Items []NameRef `xml:"other_result"`
	}{l}
	return e.EncodeElement(v, start)
}

// HostInfo describes the host's hardware. HostCPID is BOINC's host cross-project id:
// a client attaching again after a detach presents it with host id 0, and the
// scheduler gives it back the host it had.
type HostInfo struct {
	HostCPID string  `xml:"host_cpid,omitempty"`
	PNCPUs   int     `xml:"p_ncpus"`
	PFpops   float64 `xml:"p_fpops"`
	MNBytes  float64 `xml:"m_nbytes,omitempty"`
	Coprocs  Coprocs `xml:"coprocs,omitempty"`
}

// TimeStats are the host's availability fractions.
type TimeStats struct {
	OnFrac        float64 `xml:"on_frac"`
	ConnectedFrac float64 `xml:"connected_frac"`
	ActiveFrac    float64 `xml:"active_frac"`
	GPUActiveFrac float64 `xml:"gpu_active_frac,omitempty"`
}

// ReportedResult is a finished job the client reports.
type ReportedResult struct {
	Name             string  `xml:"name"`
	FinalCPUTime     float64 `xml:"final_cpu_time"`
	FinalElapsedTime float64 `xml:"final_elapsed_time"`
	ExitStatus       int     `xml:"exit_status"`
	// State is the client's result state; 5 (files uploaded) means success, 0 means
	// not given (bkit's own client may omit it).
	State         int    `xml:"state,omitempty"`
	AppVersionNum int    `xml:"app_version_num,omitempty"`
	PlanClass     string `xml:"plan_class,omitempty"`
	// OutputDigest is a bkit extension: the client's hash of the result's output
	// (e.g. sha256:HEX), which the validator (bretry validate) compares between
	// replicas. Absent (BOINC clients): the server takes the digest of the output
	// files the host uploaded; with none uploaded, the result agrees with every other.
	OutputDigest string `xml:"bkit_output_digest,omitempty"`
	// StderrOut is what BOINC clients send of the task's run: its stderr and the
	// client's messages (e.g. "process exited with code 1"), as the XML it came in.
	StderrOut *InnerXML `xml:"stderr_out,omitempty"`
}

// InnerXML is an element's content kept as it came, markup and CDATA included.
type InnerXML struct {
	Text string `xml:",innerxml"`
}

// ResultFilesUploaded is BOINC's client result state for a job that finished and
// uploaded its output.
const ResultFilesUploaded = 5

// NameRef is an element holding just a <name>.
type NameRef struct {
	Name string `xml:"name"`
}

// Coproc is one coprocessor type: what the host has and, in the request's <coprocs>,
// what it asks for.
type Coproc struct {
	Type           string  `xml:"type"`
	Count          int     `xml:"count"`
	PeakFlops      float64 `xml:"peak_flops,omitempty"`
	ReqSecs        float64 `xml:"req_secs,omitempty"`
	ReqInstances   float64 `xml:"req_instances,omitempty"`
	EstimatedDelay float64 `xml:"estimated_delay,omitempty"`
}

// Coprocs is the list inside <coprocs>. BOINC writes one element per type
// (<coproc_cuda>, <coproc_ati>, <coproc_intel_gpu>) or a generic <coproc><type>…</type>;
// both are read, and the specific names are written for the three known types.
type Coprocs []Coproc

// Legacy element names of the well-known coprocessor types and the type names bkit
// uses for them (BOINC's own: NVIDIA, ATI, intel_gpu).
var coprocElem = map[string]string{"coproc_cuda": "NVIDIA", "coproc_ati": "ATI", "coproc_intel_gpu": "intel_gpu"}

// CanonicalType maps the spellings of a coprocessor type to bkit's name for it, so
// that "cuda", "CUDA" and "NVIDIA" are the same resource.
func CanonicalType(t string) string {
	switch strings.ToLower(strings.TrimSpace(t)) {
	case "cuda", "nvidia":
		return "NVIDIA"
	case "ati", "amd", "cal", "opencl_ati":
		return "ATI"
	case "intel_gpu", "intel":
		return "intel_gpu"
	case "cpu":
		return ResourceCPU
	}
	return strings.TrimSpace(t)
}

// UnmarshalXML reads the children of <coprocs>, skipping elements that are not
// coprocessors.
func (c *Coprocs) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	for {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return nil
		case xml.StartElement:
			legacy, known := coprocElem[t.Name.Local]
			if !known && t.Name.Local != "coproc" {
				if err := d.Skip(); err != nil {
					return err
				}
				continue
			}
			var cp Coproc
			if err := d.DecodeElement(&cp, &t); err != nil {
				return fmt.Errorf("%s: %w", t.Name.Local, err)
			}
			if known {
				cp.Type = legacy
			}
			cp.Type = CanonicalType(cp.Type)
			if cp.Type == "" {
				return fmt.Errorf("coproc: missing <type>")
			}
			*c = append(*c, cp)
		}
	}
}

// MarshalXML writes <coprocs> with one element per coprocessor type.
func (c Coprocs) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	if len(c) == 0 {
		return nil
	}
	if err := e.EncodeToken(start); err != nil {
		return err
	}
	for _, cp := range c {
		name := "coproc"
		for elem, typ := range coprocElem {
			if typ == CanonicalType(cp.Type) {
				name = elem
			}
		}
		if err := e.EncodeElement(cp, xml.StartElement{Name: xml.Name{Local: name}}); err != nil {
			return err
		}
	}
	return e.EncodeToken(start.End())
}

// Find returns the coprocessor of type typ (any spelling), or nil.
func (c Coprocs) Find(typ string) *Coproc {
	typ = CanonicalType(typ)
	for i := range c {
		if c[i].Type == typ {
			return &c[i]
		}
	}
	return nil
}

// Platforms returns the platforms the host runs, its own first.
func (r *SchedulerRequest) Platforms() []string {
	var out []string
	if r.PlatformName != "" {
		out = append(out, r.PlatformName)
	}
	for _, p := range r.AltPlatforms {
		if p.Name != "" {
			out = append(out, p.Name)
		}
	}
	return out
}

// cleanStderr replaces, inside each <stderr_out> of a BOINC client's request, what
// XML 1.0 does not allow (control characters but tab and line breaks, invalid UTF-8)
// with U+FFFD. The client copies a task's stderr there unescaped (in CDATA), so an
// app that prints a colour escape (ESC) or a byte of another charset would otherwise
// make every later request of that host malformed, its reports never received.
// Nothing outside those elements changes.
func cleanStderr(body []byte) []byte {
	const open, end = "<stderr_out>", "</stderr_out>"
	if !bytes.Contains(body, []byte(open)) {
		return body
	}
	var out []byte
	rest := body
	for {
		i := bytes.Index(rest, []byte(open))
		if i < 0 {
			break
		}
		i += len(open)
		j := bytes.Index(rest[i:], []byte(end))
		if j < 0 {
			j = len(rest) - i
		}
		out = append(out, rest[:i]...)
		for k := i; k < i+j; {
			c, size := utf8.DecodeRune(rest[k : i+j])
			if (c == utf8.RuneError && size == 1) || !xmlChar(c) {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, rest[k:k+size]...)
			}
			k += size
		}
		rest = rest[i+j:]
	}
	return append(out, rest...)
}

// xmlChar reports whether XML 1.0 allows c in a document.
func xmlChar(c rune) bool {
	return c == '\t' || c == '\n' || c == '\r' || (c >= 0x20 && c <= 0xD7FF) || (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF)
}

// ResourceRequest is what a request asks of one processing resource.
type ResourceRequest struct {
	Resource  string  // ResourceCPU, a coprocessor type, or AnyResource
	Secs      float64 // instance-seconds of work wanted
	Instances float64 // send enough jobs to occupy this many instances
}

// AnyResource is the Resource of an old client's request (work_req_seconds alone):
// seed 002's seconds_to_fill, "used if !coproc_request", which jobs of any resource
// the host can run fill, since neither send_only_cpu nor send_only_cuda holds.
const AnyResource = ""

// ResourceRequests returns the nonzero per-resource requests, coprocessors first in
// the order the request names them, then the CPU. A request whose per-resource fields
// are all zero but whose work_req_seconds is not comes from an older client (seed 002:
// work_req_seconds is the largest per-resource request, so a new client never sends
// it alone): one request for AnyResource.
func (r *SchedulerRequest) ResourceRequests() []ResourceRequest {
	var out []ResourceRequest
	for _, cp := range r.Coprocs {
		if cp.ReqSecs > 0 || cp.ReqInstances > 0 {
			out = append(out, ResourceRequest{Resource: cp.Type, Secs: cp.ReqSecs, Instances: cp.ReqInstances})
		}
	}
	if r.CPUReqSecs > 0 || r.CPUReqInstances > 0 {
		out = append(out, ResourceRequest{Resource: ResourceCPU, Secs: r.CPUReqSecs, Instances: r.CPUReqInstances})
	}
	if len(out) == 0 && r.WorkReqSeconds > 0 {
		out = append(out, ResourceRequest{Resource: AnyResource, Secs: r.WorkReqSeconds})
	}
	return out
}

// MaxRequestBytes is the largest scheduler request body bserver accepts. A client
// reporting a thousand results writes about 300 KB; 4 MiB leaves room and still stops
// a runaway or hostile body before it costs memory.
const MaxRequestBytes = limits.SchedulerRequestBytes

// ParseSchedulerRequest reads a <scheduler_request> document. Unknown tags are
// skipped; a malformed document, a wrong root element, or a field bkit needs that does
// not parse or is out of range (negative, NaN, infinite) is an error.
func ParseSchedulerRequest(r io.Reader) (*SchedulerRequest, error) {
	var req SchedulerRequest
	body, err := limits.ReadAll(r, "scheduler request", MaxRequestBytes)
	if err != nil {
		if limits.IsTooLarge(err) {
			return nil, err
		}
		return nil, fmt.Errorf("reading the request: %w", err)
	}
	clean := cleanStderr(body)
	d := xml.NewDecoder(bytes.NewReader(clean))
	// BOINC clients declare ISO-8859-1 in the prolog; the ASCII subset bkit reads is
	// the same in every such charset, so read them as-is rather than fail.
	d.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }
	if err := d.Decode(&req); err != nil {
		if limits.IsTooLarge(err) {
			return nil, err
		}
		var se *xml.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("malformed XML at line %d: %s", se.Line, se.Msg)
		}
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty request: want <scheduler_request>")
		}
		return nil, fmt.Errorf("scheduler_request: %w", NamedNumberError(clean, d, err))
	}
	// Only white space, comments and processing instructions may follow the root
	// element: anything else is a request spliced onto another.
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if limits.IsTooLarge(err) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("after </scheduler_request>: %v", err)
		}
		switch t := tok.(type) {
		case xml.Comment, xml.ProcInst:
			continue
		case xml.CharData:
			if len(bytes.TrimSpace(t)) == 0 {
				continue
			}
		}
		return nil, errors.New("data after </scheduler_request>")
	}
	if err := req.validate(); err != nil {
		return nil, err
	}
	return &req, nil
}

// validate checks every field bkit reads against lib/limits, so that what is stored is
// the same on both engines and in BOINC's ranges: finite numbers in range, names that
// fit their columns.
func (r *SchedulerRequest) validate() error {
	c := limits.Checker{Prefix: "scheduler_request: "}
	c.Name("authenticator", r.Authenticator)
	c.Int("hostid", r.HostID, 0, math.MaxInt64)
	c.Int("rpc_seqno", r.RPCSeqno, 0, math.MaxInt64)
	c.Name("platform_name", r.PlatformName)
	c.Count("alt_platform", len(r.AltPlatforms), limits.AltPlatforms)
	for i, p := range r.AltPlatforms {
		c.Name(fmt.Sprintf("alt_platform[%d].name", i), p.Name)
	}
	c.String("code_sign_key", r.CodeSignKey, limits.KeyBytes)
	for _, v := range []struct {
		name string
		v    int
	}{{"core_client_major_version", r.CoreClientMajorVersion}, {"core_client_minor_version", r.CoreClientMinorVersion},
		{"core_client_release", r.CoreClientRelease}} {
		c.Int(v.name, int64(v.v), 0, math.MaxInt32)
	}
	c.Number("work_req_seconds", r.WorkReqSeconds, 0, limits.Seconds)
	c.Number("cpu_req_secs", r.CPUReqSecs, 0, limits.Seconds)
	c.Number("cpu_req_instances", r.CPUReqInstances, 0, limits.CPUs)
	c.Number("estimated_delay", r.EstimatedDelay, 0, limits.Seconds)
	c.Number("resource_share_fraction", r.ResourceShareFraction, 0, 1)
	checkCoprocs(&c, "coprocs", r.Coprocs)
	if ts := r.TimeStats; ts != nil {
		c.Number("time_stats.on_frac", ts.OnFrac, 0, 1)
		// BOINC clients send -1 while they do not know yet.
		c.Number("time_stats.connected_frac", ts.ConnectedFrac, -1, 1)
		c.Number("time_stats.active_frac", ts.ActiveFrac, 0, 1)
		c.Number("time_stats.gpu_active_frac", ts.GPUActiveFrac, 0, 1)
	}
	c.Name("host_info.host_cpid", r.HostInfo.HostCPID)
	c.Int("host_info.p_ncpus", int64(r.HostInfo.PNCPUs), 0, limits.CPUs)
	c.Number("host_info.p_fpops", r.HostInfo.PFpops, 0, limits.Flops)
	c.Number("host_info.m_nbytes", r.HostInfo.MNBytes, 0, limits.Bytes)
	checkCoprocs(&c, "host_info.coprocs", r.HostInfo.Coprocs)
	if c.Err() == nil {
		if col := r.HostCoprocs().Column(); len(col) > limits.NameBytes {
			c.String("coprocs", col, limits.NameBytes) // "longer than 254 bytes", as the host stores it
		}
	}
	for i, res := range r.Results {
		p := fmt.Sprintf("result[%d].", i)
		if strings.TrimSpace(res.Name) == "" {
			return fmt.Errorf("scheduler_request: %sname: missing", p)
		}
		c.Name(p+"name", res.Name)
		c.Number(p+"final_cpu_time", res.FinalCPUTime, 0, limits.Seconds)
		c.Number(p+"final_elapsed_time", res.FinalElapsedTime, 0, limits.Seconds)
		c.Int(p+"exit_status", int64(res.ExitStatus), math.MinInt32, math.MaxInt32)
		c.Int(p+"state", int64(res.State), 0, limits.ClientStateMax)
		c.Int(p+"app_version_num", int64(res.AppVersionNum), 0, math.MaxInt32)
		c.Name(p+"plan_class", res.PlanClass)
		c.Name(p+"bkit_output_digest", res.OutputDigest)
	}
	for i, o := range r.OtherResults {
		c.Name(fmt.Sprintf("other_results[%d].name", i), o.Name)
	}
	for i, f := range r.FileInfos {
		c.Name(fmt.Sprintf("file_info[%d].name", i), f.Name)
	}
	return c.Err()
}

func checkCoprocs(c *limits.Checker, path string, cps Coprocs) {
	for i, cp := range cps {
		p := fmt.Sprintf("%s[%d].", path, i)
		if len(cp.Type) <= limits.CoprocTypeBytes {
			p = fmt.Sprintf("%s[%d](%s).", path, i, cp.Type)
		}
		c.String(p+"type", cp.Type, limits.CoprocTypeBytes)
		c.Int(p+"count", int64(cp.Count), 0, limits.CoprocInstances)
		c.Number(p+"peak_flops", cp.PeakFlops, 0, limits.Flops)
		c.Number(p+"req_secs", cp.ReqSecs, 0, limits.Seconds)
		c.Number(p+"req_instances", cp.ReqInstances, 0, limits.CoprocInstances)
		c.Number(p+"estimated_delay", cp.EstimatedDelay, 0, limits.Seconds)
	}
}

// HostCoprocs is what coprocessors the host has: <host_info><coprocs>, completed by the
// request's top-level <coprocs> (where BOINC clients put them with their requests).
func (r *SchedulerRequest) HostCoprocs() Coprocs {
	out := append(Coprocs(nil), r.HostInfo.Coprocs...)
	for _, cp := range r.Coprocs {
		if cp.Count <= 0 {
			continue // a request for a type the host does not have
		}
		if have := out.Find(cp.Type); have != nil {
			have.Count = max(have.Count, cp.Count)
			have.PeakFlops = max(have.PeakFlops, cp.PeakFlops)
			continue
		}
		out = append(out, Coproc{Type: cp.Type, Count: cp.Count, PeakFlops: cp.PeakFlops})
	}
	return out
}

// Column writes the coprocessors as the host.coprocs column holds them:
// TYPE:COUNT:PEAK_FLOPS, comma-separated. The parser refuses a request whose host's
// coprocessors would not fit the column (limits.NameBytes), so nothing is cut.
func (c Coprocs) Column() string {
	var parts []string
	for _, cp := range c {
		t := strings.NewReplacer(",", "_", ":", "_").Replace(cp.Type)
		parts = append(parts, t+":"+strconv.Itoa(cp.Count)+":"+strconv.FormatFloat(cp.PeakFlops, 'g', -1, 64))
	}
	return strings.Join(parts, ",")
}

// Marshal writes the request as XML (what a client posts).
func (r *SchedulerRequest) Marshal() ([]byte, error) { return marshalDocument(r) }
