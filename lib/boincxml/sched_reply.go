package boincxml

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/limits"
)

// SchedulerReply is the body of the scheduler's answer: <scheduler_reply>.
type SchedulerReply struct {
	XMLName          xml.Name `xml:"scheduler_reply"`
	SchedulerVersion int      `xml:"scheduler_version,omitempty"`
	ProjectName      string   `xml:"project_name,omitempty"`
	MasterURL        string   `xml:"master_url,omitempty"`
	// HostID and Authenticator are sent when the server created the host.
	HostID        int64  `xml:"hostid,omitempty"`
	Authenticator string `xml:"authenticator,omitempty"`
	// For a host of an account (a BOINC client attached with an account key): the
	// account and the host's venue, as BOINC's scheduler sends them.
	UserID   int64  `xml:"userid,omitempty"`
	UserName string `xml:"user_name,omitempty"`
	// The account's and the host's credit (total, and average per day), which the
	// client shows.
	UserTotalCredit  float64   `xml:"user_total_credit,omitempty"`
	UserExpavgCredit float64   `xml:"user_expavg_credit,omitempty"`
	HostTotalCredit  float64   `xml:"host_total_credit,omitempty"`
	HostExpavgCredit float64   `xml:"host_expavg_credit,omitempty"`
	HostVenue        *string   `xml:"host_venue"`
	Messages         []Message `xml:"message"`
	// CodeSignKey is the project's public code-signing key in BOINC's text form; a
	// client keeps the first one it gets and checks app files' signatures with it.
	CodeSignKey *RawText `xml:"code_sign_key,omitempty"`

	// Timing (seed 000): seconds from now before the next request.
	RequestDelay  float64 `xml:"request_delay,omitempty"`
	NextRPCDelay  float64 `xml:"next_rpc_delay,omitempty"`
	ProjectIsDown Flag    `xml:"project_is_down,omitempty"`

	ResultAcks []NameRef `xml:"result_ack"`
	// Tasks the client holds that the project no longer wants (BOINC's
	// send_result_abort): abort them, or abort them if they have not started.
	ResultAborts             []NameRef `xml:"result_abort"`
	ResultAbortsIfNotStarted []NameRef `xml:"result_abort_if_not_started"`

	Apps        []ReplyApp        `xml:"app"`
	AppVersions []ReplyAppVersion `xml:"app_version"`
	FileInfos   []ReplyFileInfo   `xml:"file_info"`
	Workunits   []ReplyWorkunit   `xml:"workunit"`
	ResultsSent []ReplyResult     `xml:"result"`
	DeleteFiles []NameRef         `xml:"delete_file_info"`
	NoRscApps   []string          `xml:"no_rsc_apps"`
}

// Message is a <message priority="…">text</message> for the user.
type Message struct {
	Priority string `xml:"priority,attr"`
	Text     string `xml:",chardata"`
}

// Message priorities.
const (
	PriorityLow    = "low"
	PriorityNotice = "notice"
)

// ReplyApp names an application.
type ReplyApp struct {
	Name string `xml:"name"`
}

// RawText is element content written as it is, unescaped: BOINC clients copy some
// elements' text verbatim (a key's line breaks matter), so "\n" must not become
// "&#xA;". Only text without '<' and '&' may go in it.
type RawText struct {
	Text string `xml:",innerxml"`
}

// ReplyAppVersion is a version of an app the jobs in the reply use.
type ReplyAppVersion struct {
	AppName    string         `xml:"app_name"`
	VersionNum int            `xml:"version_num"`
	Platform   string         `xml:"platform,omitempty"`
	PlanClass  string         `xml:"plan_class,omitempty"`
	AvgNCPUs   float64        `xml:"avg_ncpus"`
	Flops      float64        `xml:"flops,omitempty"`
	Coproc     *ReplyCoproc   `xml:"coproc,omitempty"`
	FileRefs   []ReplyFileRef `xml:"file_ref,omitempty"`
}

// ReplyFileRef links a file (by its file_info name) to an app version, workunit or
// result, under the name the app opens it by in its slot.
type ReplyFileRef struct {
	FileName    string `xml:"file_name"`
	OpenName    string `xml:"open_name,omitempty"`
	MainProgram Flag   `xml:"main_program,omitempty"`
	CopyFile    Flag   `xml:"copy_file,omitempty"`
}

// ReplyCoproc is the coprocessor usage of an app version: Count instances (possibly
// fractional) of Type.
type ReplyCoproc struct {
	Type  string  `xml:"type"`
	Count float64 `xml:"count"`
}

// ReplyFileInfo describes a file: an app version's file or a workunit's input (URL
// to download from, size, MD5, and for app files the executable flag and the
// signature), or a result's output (upload URL, size limit, and the server's
// signature of the upload permission, which the client sends back with the file).
type ReplyFileInfo struct {
	Name          string  `xml:"name"`
	URL           string  `xml:"url,omitempty"`
	MD5           string  `xml:"md5_cksum,omitempty"`
	NBytes        float64 `xml:"nbytes,omitempty"`
	MaxNBytes     float64 `xml:"max_nbytes,omitempty"`
	Executable    Flag    `xml:"executable,omitempty"`
	FileSignature string  `xml:"file_signature,omitempty"`
	XMLSignature  string  `xml:"xml_signature,omitempty"`
	// GeneratedLocally and UploadWhenPresent mark an output file (older clients
	// read them; newer ones tell outputs by the upload URL).
	GeneratedLocally  Flag `xml:"generated_locally,omitempty"`
	UploadWhenPresent Flag `xml:"upload_when_present,omitempty"`
	Sticky            Flag `xml:"sticky,omitempty"`
}

// ReplyWorkunit is the job description.
type ReplyWorkunit struct {
	Name          string         `xml:"name"`
	AppName       string         `xml:"app_name"`
	RscFpopsEst   float64        `xml:"rsc_fpops_est"`
	RscFpopsBound float64        `xml:"rsc_fpops_bound"`
	FileRefs      []ReplyFileRef `xml:"file_ref,omitempty"`
}

// ReplyResult is one instance of a workunit sent to this host.
type ReplyResult struct {
	Name           string         `xml:"name"`
	WUName         string         `xml:"wu_name"`
	ReportDeadline UnixTime       `xml:"report_deadline"`
	VersionNum     int            `xml:"version_num"`
	Platform       string         `xml:"platform,omitempty"`
	PlanClass      string         `xml:"plan_class,omitempty"`
	FileRefs       []ReplyFileRef `xml:"file_ref,omitempty"`
}

// Flag is a boolean element, written <tag>1</tag> when true and left out when false.
// BOINC clients read <tag/> and <tag>1</tag> as true but fail on <tag></tag>, which is
// what encoding/xml makes of an empty struct; an empty element is read as true.
type Flag bool

// MarshalText writes 1.
func (f Flag) MarshalText() ([]byte, error) {
	if f {
		return []byte("1"), nil
	}
	return []byte("0"), nil
}

// UnmarshalText reads "", 1 or true as true and 0 or false as false.
func (f *Flag) UnmarshalText(b []byte) error {
	switch strings.TrimSpace(string(b)) {
	case "", "1", "true":
		*f = true
	case "0", "false":
		*f = false
	default:
		return fmt.Errorf("want 0 or 1, got %q", b)
	}
	return nil
}

// UnixTime is an absolute time in Unix seconds. It is written in plain decimal
// (1700001000, not 1.700001e+09) so that replies read as times to a person and to any
// client's number parser.
type UnixTime float64

// MarshalText writes t in plain decimal.
func (t UnixTime) MarshalText() ([]byte, error) {
	return strconv.AppendFloat(nil, float64(t), 'f', -1, 64), nil
}

// UnmarshalText reads any float syntax.
func (t *UnixTime) UnmarshalText(b []byte) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	*t = UnixTime(v)
	return err
}

// Marshal writes the reply as a complete XML document.
func (r *SchedulerReply) Marshal() ([]byte, error) { return marshalDocument(r) }

// marshalDocument writes v as an indented XML document with its header: the form both
// scheduler messages take on the wire.
func marshalDocument(v any) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(xml.Header)
	e := xml.NewEncoder(&b)
	e.Indent("", "  ")
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// ErrorReply is a reply that carries only a notice: what the scheduler sends when it
// refuses a request (malformed, unknown host, wrong authenticator).
func ErrorReply(msg string, requestDelay float64) *SchedulerReply {
	return &SchedulerReply{
		SchedulerVersion: SchedulerVersion,
		Messages:         []Message{{Priority: PriorityNotice, Text: msg}},
		RequestDelay:     requestDelay,
	}
}

// SchedulerVersion is the scheduler_version bserver announces.
const SchedulerVersion = 1

// ParseSchedulerReply reads a <scheduler_reply> document (what a client receives).
func ParseSchedulerReply(r io.Reader) (*SchedulerReply, error) {
	var rep SchedulerReply
	lr := limits.Wrap(r, "scheduler reply", limits.SchedulerReplyBytes)
	d := xml.NewDecoder(lr)
	d.CharsetReader = func(_ string, in io.Reader) (io.Reader, error) { return in, nil }
	if err := d.Decode(&rep); err != nil {
		if limits.IsTooLarge(err) {
			return nil, err
		}
		var se *xml.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("malformed XML at line %d: %s", se.Line, se.Msg)
		}
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty reply: want <scheduler_reply>")
		}
		return nil, fmt.Errorf("scheduler_reply: %w", err)
	}
	return &rep, nil
}
