// Package bserver is the program bserver: a project's database administration (init,
// app add, app-version add, work create, status) and its scheduler endpoint (serve).
// lib/store owns the database and lib/server the endpoint; this is their shell.
package bserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/store"
	"github.com/urfave/cli/v3"
)

// Main runs bserver with args (args[0] is the program name) and returns its exit status.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cliutil.Run(command(), args, stdin, stdout, stderr)
}

const flagDB = "db"

// EnvDB is the environment variable --db falls back to.
const EnvDB = "BSERVER_DB"

func command() *cli.Command {
	return &cli.Command{
		Name:      "bserver",
		Usage:     "a project's database and scheduler endpoint (BOINC-style scheduler RPCs over HTTP)",
		UsageText: "bserver init | user add | user list | keys | app add | app set | app-version add | work create | status | serve | assimilate | delete-files | purge | stats export [flags]",
		Description: cliutil.Help(`
The server side of bkit: one database (SQLite file or MySQL/MariaDB) that the
scheduler endpoint shares with the project's cron jobs: bretry (seed 003's retries and
the validator) and blocality's generate, transition and credit (seed 004's locality
daemons), each with its own --help.

Set up a project:
  bserver init                  create or upgrade the schema (safe to repeat)
  bserver user add              create a volunteer's account; prints its account key
  bserver user list             list the accounts with their hosts and account keys
  bserver keys                  make the code-signing key pair (BOINC's format) and upload key
  bserver app add NAME          register an application
  bserver app set NAME          change its retry parameters (seed 003, used by bretry)
  bserver app-version add       register a version: the CPUs and coprocessor it uses, its speed
  bserver work create           create workunits and their results (like BOINC's create_work)
  bserver status                count apps, hosts, workunits and results by state
  bserver serve                 answer scheduler requests on HTTP

The lifecycle after validation (cron jobs, safe to overlap and to kill):
  bserver assimilate            hand validated and given-up workunits to the scientist
  bserver delete-files          delete the files of assimilated workunits that nothing needs
  bserver purge                 move old finished workunits out of the database into archive files
  bserver stats export DIR      write the statistics export (user.gz, host.gz, team.gz)

--db (or $BSERVER_DB) names the database: sqlite:PATH or a bare PATH for SQLite,
mysql://user:pass@host:port/db for MySQL/MariaDB. --project-dir (or
$BSERVER_PROJECT_DIR; default the SQLite file's directory) holds download/ (app and
input files), upload/ (output files) and keys/. Each subcommand has its own --help.`,
			[]string{
				"bserver init --db project.db",
				"bserver app add --db project.db uppercase",
				"bserver app-version add --db project.db --app uppercase --version 1 --avg-ncpus 1",
				"bserver work create --db project.db --app uppercase --count 100 --fpops-est 1e12 --delay-bound 2d",
				"bserver serve --db project.db --addr 127.0.0.1:8080",
			}, ""),
		Flags: []cli.Flag{
			&cli.StringFlag{
				Name:    flagDB,
				Usage:   "the project database `DSN`: sqlite:PATH, PATH, or mysql://user:pass@host:port/db",
				Sources: cli.EnvVars(EnvDB),
			},
			projectDirFlag(),
			cliutil.NowFlag(),
			cliutil.VerboseFlag(),
		},
		Commands: []*cli.Command{initCommand(), userCommand(), keysCommand(), appCommand(), appVersionCommand(), workCommand(), statusCommand(), serveCommand(), assimilateCommand(), deleteFilesCommand(), purgeCommand(), statsCommand()},
		Action: func(_ context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() > 0 {
				return cliutil.Usagef("unknown command %q (see 'bserver --help')", cmd.Args().First())
			}
			return cliutil.Usagef("missing command (see 'bserver --help')")
		},
	}
}

// openStore opens --db; with check, it also requires an up-to-date schema.
func openStore(ctx context.Context, cmd *cli.Command, check bool) (*store.Store, error) {
	dsn := cmd.String(flagDB)
	if dsn == "" {
		return nil, cliutil.Usagef("--db is required (or set $%s): sqlite:PATH, PATH or mysql://user:pass@host:port/db", EnvDB)
	}
	if _, _, err := store.ParseDSN(dsn); err != nil {
		return nil, cliutil.Usagef("--db: %v", err)
	}
	if check {
		// Opening a SQLite file creates it; only init should.
		return store.OpenInitialised(ctx, dsn)
	}
	return store.Open(dsn)
}

// report is a read-only listing's action: no arguments, the store opened, read
// once, and what was read written as JSON (-o json) or by table. read is a store
// method's expression, (*store.Store).Status say: the receiver comes first.
func report[T any](ctx context.Context, cmd *cli.Command, read func(*store.Store, context.Context) (T, error), table func(io.Writer, T) error) error {
	if err := cliutil.NoArgs(cmd); err != nil {
		return err
	}
	s, err := openStore(ctx, cmd, true)
	if err != nil {
		return err
	}
	defer s.Close()
	v, err := read(s, ctx)
	if err != nil {
		return err
	}
	w := cmd.Root().Writer
	if cmd.String(cliutil.FlagOutput) == "json" {
		return cliutil.WriteJSON(w, v)
	}
	return table(w, v)
}

// userError makes the store's "already exists" and "not found" exit 2: they are the
// caller's mistakes, and nothing was written.
func userError(err error) error {
	if errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound) {
		return cliutil.BadInput(err)
	}
	return err
}

func initCommand() *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "create the project database's schema, or bring it up to date",
		UsageText: "bserver init --db DSN",
		Description: cliutil.Help(`
Applies the schema migrations the database lacks, each in its own transaction, and
records them in the schema_version table. Running it again changes nothing. A SQLite
file is created, with its directory; a MySQL/MariaDB database must exist (CREATE
DATABASE): init makes its tables. Every
other subcommand refuses a database whose schema is missing or older than this
program's, and says to run init.`,
			[]string{"bserver init --db sqlite:/var/lib/project/project.db", "bserver init --db mysql://boinc:secret@db.example:3306/project"}, ""),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := cliutil.NoArgs(cmd); err != nil {
				return err
			}
			now, err := cliutil.Now(cmd)
			if err != nil {
				return err
			}
			// A new project's first command: its SQLite file's directory (where
			// download/, upload/ and keys/ go too) may not exist yet.
			if path, ok := store.SQLitePath(cmd.String(flagDB)); ok {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					return err
				}
			}
			s, err := openStore(ctx, cmd, false)
			if err != nil {
				return err
			}
			defer s.Close()
			applied, err := s.Migrate(ctx, now)
			if err != nil {
				return err
			}
			if len(applied) == 0 {
				fmt.Fprintf(cmd.Root().Writer, "schema already at version %d\n", store.SchemaVersion)
			} else {
				fmt.Fprintf(cmd.Root().Writer, "schema at version %d (applied %v)\n", store.SchemaVersion, applied)
			}
			return nil
		},
	}
}

// OpenStore opens the database --db names (or $BSERVER_DB) as every bserver
// subcommand does, with the same messages and exit statuses; with check it also
// requires an up-to-date schema. Other server programs (blocality) share it so a
// project's cron jobs read one --db the same way.
func OpenStore(ctx context.Context, cmd *cli.Command, check bool) (*store.Store, error) {
	return openStore(ctx, cmd, check)
}

// UserError makes the store's "already exists" and "not found" exit 2.
func UserError(err error) error { return userError(err) }

// DBFlag is the --db flag every server program takes.
func DBFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    flagDB,
		Usage:   "the project database `DSN`: sqlite:PATH, PATH, or mysql://user:pass@host:port/db",
		Sources: cli.EnvVars(EnvDB),
	}
}
