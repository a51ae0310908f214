package bserver

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bkit/bkit/lib/boinccrypt"
	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/cliutil"
	"github.com/bkit/bkit/lib/limits"
	"github.com/bkit/bkit/lib/store"
	"github.com/urfave/cli/v3"
)

const flagProjectDir = "project-dir"

// EnvProjectDir is the environment variable --project-dir falls back to.
const EnvProjectDir = "BSERVER_PROJECT_DIR"

// Names inside the project directory (BOINC's where it has them).
const (
	downloadSubdir = "download"
	uploadSubdir   = "upload"
	keysSubdir     = "keys"
	codeSignPriv   = "code_sign_private"
	codeSignPub    = "code_sign_public"
	uploadKeyFile  = "upload_key"
)

func projectDirFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    flagProjectDir,
		Usage:   "the project's file `DIR` (download/, upload/, keys/); default: the SQLite database's directory",
		Sources: cli.EnvVars(EnvProjectDir),
	}
}

// projectDir is --project-dir, or the directory of a SQLite database.
func projectDir(cmd *cli.Command) (string, error) {
	if d := cmd.String(flagProjectDir); d != "" {
		return d, nil
	}
	if path, ok := store.SQLitePath(cmd.String(flagDB)); ok {
		return filepath.Dir(path), nil
	}
	return "", cliutil.Usagef("--project-dir is required with a MySQL database (or set $%s)", EnvProjectDir)
}

func keysCommand() *cli.Command {
	return &cli.Command{
		Name:      "keys",
		Usage:     "make the project's code-signing key pair (BOINC's format) and upload key",
		UsageText: "bserver keys [--db DSN | --project-dir DIR]",
		Description: cliutil.Help(`
Writes, in the project directory's keys/:
  code_sign_private   the RSA code-signing key (1024 bits, BOINC's text form, mode 0600)
  code_sign_public    its public half: what 'bserver serve' sends clients as <code_sign_key>
  upload_key          the secret that signs upload permissions (mode 0600)
'bserver app-version add --file' signs app files with code_sign_private. A BOINC client
keeps the first code-signing key a project sends it, so existing keys are never
replaced (status 2). Keep code_sign_private off the server if you can: BOINC projects
sign on a separate machine and copy only the public key and the signatures.`,
			[]string{"bserver keys --db project.db", "bserver keys --project-dir /var/lib/project"}, ""),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := cliutil.NoArgs(cmd); err != nil {
				return err
			}
			dir, err := projectDir(cmd)
			if err != nil {
				return err
			}
			kd := filepath.Join(dir, keysSubdir)
			for _, n := range []string{codeSignPriv, codeSignPub, uploadKeyFile} {
				if _, err := os.Stat(filepath.Join(kd, n)); err == nil {
					return cliutil.Usagef("%s: exists; clients keep the first key a project sends, so keys are never replaced", filepath.Join(kd, n))
				}
			}
			if err := os.MkdirAll(kd, 0o700); err != nil {
				return err
			}
			k, err := boinccrypt.GenerateKey(nil)
			if err != nil {
				return err
			}
			var secret [32]byte
			rand.Read(secret[:])
			for _, f := range []struct {
				name string
				data string
				perm os.FileMode
			}{
				{codeSignPriv, boinccrypt.FormatPrivateKey(k), 0o600},
				{uploadKeyFile, hex.EncodeToString(secret[:]) + "\n", 0o600},
				{codeSignPub, boinccrypt.FormatPublicKey(&k.PublicKey), 0o644},
			} {
				if err := writeNew(filepath.Join(kd, f.name), []byte(f.data), f.perm); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.Root().Writer, "wrote %s, %s and %s\n", filepath.Join(kd, codeSignPriv), filepath.Join(kd, codeSignPub), filepath.Join(kd, uploadKeyFile))
			return nil
		},
	}
}

// writeNew writes a file that must not exist yet, whole or not at all.
func writeNew(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	if err := os.Chmod(tmp, perm); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// projectKeys reads what serve needs from keys/: the public code-signing key and the
// upload key; either may be absent (then "" or nil).
func projectKeys(dir string) (pub string, upload []byte, err error) {
	kd := filepath.Join(dir, keysSubdir)
	if b, err := limits.ReadFile(filepath.Join(kd, codeSignPub), limits.KeyBytes); err == nil {
		if _, err := boinccrypt.ParsePublicKey(string(b)); err != nil {
			return "", nil, fmt.Errorf("%s: %v", filepath.Join(kd, codeSignPub), err)
		}
		pub = strings.TrimSpace(string(b)) + "\n"
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", nil, err
	}
	if b, err := limits.ReadFile(filepath.Join(kd, uploadKeyFile), limits.KeyBytes); err == nil {
		upload, err = hex.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(upload) < 16 {
			return "", nil, fmt.Errorf("%s: want at least 16 bytes in hex", filepath.Join(kd, uploadKeyFile))
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", nil, err
	}
	return pub, upload, nil
}

// stageFile copies src into the download directory as name and returns its size and
// MD5. A file of that name with the same contents is reused; with other contents it is
// an error (status 2), since clients may hold the old one under that name.
func stageFile(dir, src, name string) (float64, string, error) {
	if !validFileName(name) {
		return 0, "", cliutil.Usagef("%s: file name: want letters, digits, '_', '.' or '-', got %q", src, name)
	}
	in, err := os.Open(src)
	if err != nil {
		return 0, "", cliutil.BadInput(err)
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !fi.Mode().IsRegular() {
		return 0, "", cliutil.Usagef("%s: not a regular file", src)
	}
	dd := filepath.Join(dir, downloadSubdir)
	if err := os.MkdirAll(dd, 0o755); err != nil {
		return 0, "", err
	}
	tmp, err := os.CreateTemp(dd, ".stage-*")
	if err != nil {
		return 0, "", err
	}
	defer os.Remove(tmp.Name())
	h := md5.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), in)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, "", err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	dst := filepath.Join(dd, name)
	if old, err := md5File(dst); err == nil {
		if old != sum {
			return 0, "", cliutil.Usagef("%s: exists with other contents; give the new file another name", dst)
		}
		return float64(n), sum, nil
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return 0, "", err
	}
	return float64(n), sum, os.Rename(tmp.Name(), dst)
}

func md5File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := md5.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// validFileName tells whether s may name a file in the project's directories.
func validFileName(s string) bool { return store.ValidName(s, store.MaxFileNameLen) }

func userCommand() *cli.Command {
	return &cli.Command{
		Name:      "user",
		Usage:     "manage volunteers' accounts",
		UsageText: "bserver user add --name NAME [--email ADDR] | bserver user list",
		Commands: []*cli.Command{{
			Name:      "add",
			Usage:     "create an account and print its account key",
			UsageText: "bserver user add --db DSN --name NAME [--email ADDR [--password-file FILE]]",
			Description: cliutil.Help(`
Creates an account and prints its account key (authenticator) alone on standard
output. A BOINC client attached with that key becomes a new host of the account on
its first scheduler request (the reply gives it its host id); later requests present
the host id and the key.

With --password-file (the first line of FILE, or of standard input for -, at least 6
characters) the account can also be found by e-mail address and password, as BOINC
Manager's "add project" wizard and boinccmd --lookup_account do (lookup_account.php);
the address is then stored in lower case and must be new. Clients cannot create
accounts.`,
				[]string{
					"bserver user add --db project.db --name alice --email alice@example.org",
					"boinccmd --project_attach http://127.0.0.1:8080/ $(bserver user add --db project.db --name bob)",
					"bserver user add --db project.db --name carol --email carol@example.org --password-file carol.pw",
				}, ""),
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "name", Usage: "the volunteer's `NAME` (shown to their client)"},
				&cli.StringFlag{Name: "email", Usage: "e-mail `ADDR` (optional; required with --password-file)"},
				&cli.StringFlag{Name: "password-file", Usage: "read the account's password from the first line of `FILE` (- for standard input)"},
			},
			Action: func(ctx context.Context, cmd *cli.Command) error {
				if err := cliutil.NoArgs(cmd); err != nil {
					return err
				}
				name, email := strings.TrimSpace(cmd.String("name")), strings.TrimSpace(cmd.String("email"))
				switch {
				case name == "":
					return cliutil.Usagef("--name is required")
				case len(name) > 254 || strings.ContainsAny(name, "<>&\x00\n"):
					return cliutil.Usagef("--name: at most 254 characters, none of < > & or line breaks, got %q", name)
				case len(email) > 254 || (email != "" && (!strings.Contains(email, "@") || strings.ContainsAny(email, "<>&\x00\n "))):
					return cliutil.Usagef("--email: want an address like name@example.org, got %q", email)
				}
				var password string
				if f := cmd.String("password-file"); f != "" {
					if email == "" {
						return cliutil.Usagef("--password-file needs --email: the address names the account")
					}
					var b []byte
					var err error
					if f == "-" {
						b, err = limits.ReadAllFixed(cmd.Root().Reader, "standard input", limits.LineBytes)
					} else {
						b, err = limits.ReadFile(f, limits.LineBytes)
					}
					if err != nil {
						return cliutil.Usagef("--password-file: %v", err)
					}
					password, _, _ = strings.Cut(string(b), "\n")
					password = strings.TrimSuffix(password, "\r")
					if len(password) < 6 || len(password) > 254 {
						return cliutil.Usagef("--password-file: want a password of 6 to 254 bytes on the first line, got %d bytes", len(password))
					}
				}
				s, now, err := openStoreAt(ctx, cmd)
				if err != nil {
					return err
				}
				defer s.Close()
				var u *store.User
				if password != "" {
					u, err = s.AddUserWithPassword(ctx, name, email, password, now)
				} else {
					u, err = s.AddUser(ctx, name, email, now)
				}
				if err != nil {
					return userError(err)
				}
				fmt.Fprintln(cmd.Root().Writer, u.Authenticator)
				return nil
			},
		}, {
			Name:        "list",
			Usage:       "list accounts with their hosts and account keys",
			UsageText:   "bserver user list --db DSN [-o table|json]",
			Description: cliutil.Help(`Lists every account: id, name, e-mail, number of hosts, total credit granted (bretry validate), account key.`, []string{"bserver user list --db project.db", "bserver user list --db project.db -o json"}, ""),
			Flags:       []cli.Flag{cliutil.FormatFlag("table", "json")},
			Action: func(ctx context.Context, cmd *cli.Command) error {
				return report(ctx, cmd, (*store.Store).Users, func(w io.Writer, users []store.User) error {
					t := cliutil.NewTable(w, "id", "name", "email", "hosts", "credit", "account key")
					for _, u := range users {
						t.Append(strconv.FormatInt(u.ID, 10), u.Name, u.EmailAddr, strconv.FormatInt(u.Hosts, 10), cliutil.Num(u.TotalCredit), u.Authenticator)
					}
					return t.Render()
				})
			},
		}},
	}
}

// stageAppFiles copies an app version's files to the download directory as
// APP_VERSION_PLATFORM_BASENAME and signs them with the project's code-signing key.
func stageAppFiles(cmd *cli.Command, av store.AppVersion, paths []string) ([]store.AppVersionFile, error) {
	dir, err := projectDir(cmd)
	if err != nil {
		return nil, err
	}
	privPath := filepath.Join(dir, keysSubdir, codeSignPriv)
	b, err := limits.ReadFile(privPath, limits.KeyBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, cliutil.Usagef("%s: no code-signing key: run 'bserver keys' first (BOINC clients run only signed app files)", privPath)
	}
	if err != nil {
		return nil, err
	}
	key, err := boinccrypt.ParsePrivateKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", privPath, err)
	}
	var out []store.AppVersionFile
	seen := map[string]bool{}
	for i, p := range paths {
		base := filepath.Base(p)
		if seen[base] {
			return nil, cliutil.Usagef("--file: two files named %s", base)
		}
		seen[base] = true
		name := fmt.Sprintf("%s_%d_%s_%s", av.AppName, av.VersionNum, av.Platform, base)
		if av.PlanClass != "" {
			name = fmt.Sprintf("%s_%d_%s__%s_%s", av.AppName, av.VersionNum, av.Platform, av.PlanClass, base)
		}
		n, sum, err := stageFile(dir, p, name)
		if err != nil {
			return nil, err
		}
		sig, err := boinccrypt.SignMD5(key, sum)
		if err != nil {
			return nil, err
		}
		out = append(out, store.AppVersionFile{Name: name, OpenName: base, MainProgram: i == 0, NBytes: n, MD5: sum, Signature: sig})
	}
	return out, nil
}

// stageInputs copies --input files to the download directory.
func stageInputs(cmd *cli.Command) ([]store.WUFile, error) {
	specs := cmd.StringSlice("input")
	if len(specs) == 0 {
		return nil, nil
	}
	dir, err := projectDir(cmd)
	if err != nil {
		return nil, err
	}
	var out []store.WUFile
	seen := map[string]bool{}
	for _, spec := range specs {
		open, path, ok := strings.Cut(spec, "=")
		if !ok {
			open, path = filepath.Base(spec), spec
		}
		if !validFileName(open) || seen[open] {
			return nil, cliutil.Usagef("--input %s: open name: want a unique name of letters, digits, '_', '.' or '-', got %q", spec, open)
		}
		seen[open] = true
		n, sum, err := stageFile(dir, path, filepath.Base(path))
		if err != nil {
			return nil, err
		}
		out = append(out, store.WUFile{Name: filepath.Base(path), OpenName: open, NBytes: n, MD5: sum})
	}
	return out, nil
}

// defaultMaxOutputBytes is an output file's size limit when --output gives none.
const defaultMaxOutputBytes = 10e6

// outputSpecs reads --output or --result-template.
func outputSpecs(cmd *cli.Command) ([]store.WUOutput, error) {
	var outs []store.WUOutput
	if t := cmd.String("result-template"); t != "" {
		if len(cmd.StringSlice("output")) > 0 {
			return nil, cliutil.Usagef("--output and --result-template: give one of them")
		}
		b, err := limits.ReadFile(t, limits.TemplateBytes)
		if err != nil {
			return nil, cliutil.BadInput(fmt.Errorf("--result-template: %w", err))
		}
		if outs, err = parseResultTemplate(b); err != nil {
			return nil, cliutil.Usagef("%s: %v", t, err)
		}
		return outs, nil
	}
	seen := map[string]bool{}
	for _, spec := range cmd.StringSlice("output") {
		open, limit, hasLimit := strings.Cut(spec, ":")
		o := store.WUOutput{OpenName: open, MaxNBytes: defaultMaxOutputBytes}
		if !validFileName(open) || seen[open] {
			return nil, cliutil.Usagef("--output %s: open name: want a unique name of letters, digits, '_', '.' or '-', got %q", spec, open)
		}
		seen[open] = true
		if hasLimit {
			v, err := strconv.ParseFloat(limit, 64)
			if err != nil || !(v > 0) || v > 1<<40 {
				return nil, cliutil.Usagef("--output %s: MAX_BYTES: want a number of bytes > 0, got %q", spec, limit)
			}
			o.MaxNBytes = v
		}
		outs = append(outs, o)
	}
	return outs, nil
}

func parseResultTemplate(b []byte) ([]store.WUOutput, error) {
	outs, err := boincxml.ParseResultTemplate(b)
	if err != nil {
		return nil, err
	}
	var res []store.WUOutput
	for _, o := range outs {
		if !validFileName(o.OpenName) {
			return nil, fmt.Errorf("open name %q: want letters, digits, '_', '.' or '-'", o.OpenName)
		}
		res = append(res, store.WUOutput{OpenName: o.OpenName, MaxNBytes: o.MaxNBytes})
	}
	return res, nil
}
