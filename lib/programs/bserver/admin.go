package bserver

import (
	"context"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/store"
	"github.com/urfave/cli/v3"
)

// What the administration subcommands (app.go, appversion.go, work.go, status.go)
// share.

// maxName is the longest app name, platform or workunit name prefix: they end up in
// file and result names.
const maxName = 100

func checkName(what, s string) error {
	if !store.ValidName(s, maxName) {
		return cliutil.Usagef("%s: want letters, digits, '_', '.' or '-' (at most 100, not starting with a punctuation mark), got %q", what, s)
	}
	return nil
}

// openStoreAt is what every command that adds rows starts with: the time to stamp them
// with (--now) and the project's existing database.
func openStoreAt(ctx context.Context, cmd *cli.Command) (*store.Store, float64, error) {
	now, err := cliutil.Now(cmd)
	if err != nil {
		return nil, 0, err
	}
	s, err := openStore(ctx, cmd, true)
	return s, now, err
}
