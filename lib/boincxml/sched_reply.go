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
	HostID        int64     `xml:"hostid,omitempty"`
	Authenticator string    `xml:"authenticator,omitempty"`
	Messages      []Message `xml:"message"`

	// Timing (seed 000): seconds from now before the next request.
	RequestDelay  float64   `xml:"request_delay,omitempty"`
	NextRPCDelay  float64   `xml:"next_rpc_delay,omitempty"`
	ProjectIsDown *struct{} `xml:"project_is_down,omitempty"`

	ResultAcks []NameRef `xml:"result_ack"`

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

// ReplyAppVersion is a version of an app the jobs in the reply use.
type ReplyAppVersion struct {
	AppName    string       `xml:"app_name"`
	VersionNum int          `xml:"version_num"`
	PlanClass  string       `xml:"plan_class,omitempty"`
	AvgNCPUs   float64      `xml:"avg_ncpus"`
	Flops      float64      `xml:"flops,omitempty"`
	Coproc     *ReplyCoproc `xml:"coproc,omitempty"`
}

// ReplyCoproc is the coprocessor usage of an app version: Count instances (possibly
// fractional) of Type.
type ReplyCoproc struct {
	Type  string  `xml:"type"`
	Count float64 `xml:"count"`
}

// ReplyFileInfo describes an input file.
type ReplyFileInfo struct {
	Name   string    `xml:"name"`
	URL    string    `xml:"url,omitempty"`
	NBytes float64   `xml:"nbytes,omitempty"`
	Sticky *struct{} `xml:"sticky,omitempty"`
}

// ReplyWorkunit is the job description.
type ReplyWorkunit struct {
	Name          string    `xml:"name"`
	AppName       string    `xml:"app_name"`
	RscFpopsEst   float64   `xml:"rsc_fpops_est"`
	RscFpopsBound float64   `xml:"rsc_fpops_bound"`
	FileRefs      []NameRef `xml:"file_ref,omitempty"`
}

// ReplyResult is one instance of a workunit sent to this host.
type ReplyResult struct {
	Name           string   `xml:"name"`
	WUName         string   `xml:"wu_name"`
	ReportDeadline UnixTime `xml:"report_deadline"`
	VersionNum     int      `xml:"version_num"`
	PlanClass      string   `xml:"plan_class,omitempty"`
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
