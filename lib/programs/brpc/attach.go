package brpc

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/state"
	"github.com/urfave/cli/v3"
)

const (
	flagProject       = "project"
	flagShare         = "share"
	flagAuthenticator = "authenticator"
)

func attachCommand() *cli.Command {
	return &cli.Command{
		Name:      "attach",
		Usage:     "attach the client to a project by its master URL (as boinccmd --project_attach does)",
		UsageText: "brpc attach URL [--project NAME] [--share S] [--authenticator KEY] [--state FILE [--in-place]] [-o json|yaml]",
		Description: cliutil.Help(`
Points project --project at the master URL URL, adding the project (resource share
--share, default 100) when the document has none of that name. Without --project, the
document's only project is pointed at URL. The project then starts afresh at URL: its
scheduler URLs, host id, failure count, minimum RPC time and master-fetch flag are
cleared, so the next brpc session reads URL's master file for its scheduler URLs and
makes the first scheduler RPC. --authenticator gives the account key (a BOINC
project's, or 'bserver user add' prints one), which bserver serve requires; without it
only a server started with --anonymous-hosts (testing) takes the host, as one of no
account. Everything else in the document is kept (its
rpc_seqno too, which bsim's live runs count RPCs by).

`+cliutil.SchemaNote,
			[]string{
				"brpc attach http://127.0.0.1:8080/ --project bkit --state client.json --in-place",
				"brpc attach http://127.0.0.1:8080/ --authenticator 5f0c…e1 < client.yaml > attached.yaml",
			}, ""),
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: flagProject, Usage: "the project `NAME` (added when absent; default: the document's only project)"},
			&cli.FloatFlag{Name: flagShare, Usage: "resource share `S` of the project (default: kept, or 100 for a new one)"},
			&cli.StringFlag{Name: flagAuthenticator, Usage: "the account `KEY` to present (bserver serve requires one unless --anonymous-hosts)"},
		}, cliutil.DocumentFlags("json", "yaml")...),
		Action: runAttach,
	}
}

func runAttach(_ context.Context, cmd *cli.Command) error {
	if cmd.Args().Len() != 1 {
		return cliutil.Usagef("want one master URL, got %d arguments (see 'brpc attach --help')", cmd.Args().Len())
	}
	master := cmd.Args().First()
	if u, err := url.Parse(master); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return cliutil.Usagef("URL %q: want an http:// or https:// master URL", master)
	}
	share := cmd.Float(flagShare)
	if cmd.IsSet(flagShare) && !(share >= 0 && !math.IsInf(share, 1)) {
		return cliutil.Usagef("--%s: want a resource share >= 0, got %s", flagShare, strconv.FormatFloat(share, 'g', -1, 64))
	}
	in, err := cliutil.ReadState(cmd)
	if err != nil {
		return err
	}
	doc := in.Doc
	name := cmd.String(flagProject)
	i := -1
	switch {
	case name != "":
		i = slices.IndexFunc(doc.Projects, func(p state.Project) bool { return p.Name == name })
	case len(doc.Projects) == 1:
		i = 0
	default:
		return cliutil.Usagef("--%s: %s has %d projects: name the one to attach (or a new one)", flagProject, in.File, len(doc.Projects))
	}
	if i < 0 {
		if !cmd.IsSet(flagShare) {
			share = 100
		}
		doc.Projects = append(doc.Projects, state.Project{Name: name, ResourceShare: share})
		i = len(doc.Projects) - 1
	} else if cmd.IsSet(flagShare) {
		doc.Projects[i].ResourceShare = share
	}
	p := &doc.Projects[i]
	p.MasterURL, p.SchedulerURLs, p.Authenticator, p.HostID = master, nil, cmd.String(flagAuthenticator), 0
	p.NRPCFailures, p.MinRPCTime, p.MasterFetchPending = 0, 0, false
	if err := state.Validate(doc); err != nil {
		return cliutil.BadInput(fmt.Errorf("%s: %w", in.File, err))
	}
	return cliutil.WriteState(cmd, in, nil)
}
