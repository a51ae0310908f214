package cliutil

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/bkit/bkit/lib/state"
	"github.com/urfave/cli/v3"
)

// Input is a state document read through --state or standard input.
type Input struct {
	Doc    *state.Document
	Format state.Format
	File   string // the name used in messages: the path, or "stdin"
	// Source is the YAML read (nil for JSON): with --in-place the file is written back
	// with its comments (state.WriteLike).
	Source []byte
}

// ReadState reads and validates the document named by --state, or standard input.
// Invalid documents are usage errors (status 2).
func ReadState(cmd *cli.Command) (*Input, error) {
	path := cmd.String(FlagState)
	if cmd.Bool(FlagInPlace) && (path == "" || path == "-") {
		return nil, Usagef("--in-place needs --state FILE")
	}
	// A program that reads a state document decides once and exits; collecting garbage
	// as eagerly as a long-running server would costs it a fifth of its time on a large
	// document, so let the heap grow further between collections.
	debug.SetGCPercent(400)
	var r io.Reader = cmd.Root().Reader
	file := "stdin"
	if path != "" && path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, Usagef("%v", err)
		}
		defer f.Close()
		r, file = f, path
	}
	lr, err := LimitReader(cmd, r, file)
	if err != nil {
		return nil, err
	}
	doc, format, source, err := state.ReadSource(lr, file)
	if err != nil {
		return nil, BadInput(err)
	}
	in := &Input{Doc: doc, Format: format, File: file}
	if format == state.YAML {
		in.Source = source
	}
	return in, nil
}

// WriteState writes the decided document as -o and --in-place say. With -o table, table
// writes the human explanation to standard output instead of the document (and with
// --in-place the file is still replaced by the document, in its own format).
//
// The document is streamed through a buffer (lib/state's Write), never held whole as
// bytes: on this machine memory first touched costs about as much as the decision.
func WriteState(cmd *cli.Command, in *Input, table func(io.Writer) error) error {
	out := cmd.String(FlagOutput)
	stdout := cmd.Root().Writer
	if cmd.Bool(FlagInPlace) {
		format := in.Format
		if out == string(state.JSON) || out == string(state.YAML) {
			format = state.Format(out)
		}
		if err := WriteFileAtomicFunc(cmd.String(FlagState), func(w io.Writer) error {
			return in.write(w, format)
		}); err != nil {
			return err
		}
		if out == "table" && table != nil {
			return table(stdout)
		}
		return nil
	}
	if out == "table" && table != nil {
		return table(stdout)
	}
	format := in.Format
	if out != "" {
		format = state.Format(out)
	}
	bw := bufio.NewWriterSize(stdout, 64<<10)
	if err := state.Write(bw, in.Doc, format); err != nil {
		return err
	}
	return bw.Flush()
}

// write writes the document in format to the --in-place file: YAML with the comments
// of the YAML read (a file a person wrote and keeps; a document on standard output is
// a program's, without them).
func (in *Input) write(w io.Writer, format state.Format) error {
	if format == state.YAML && in.Source != nil {
		return state.WriteLike(w, in.Doc, in.Source)
	}
	return state.Write(w, in.Doc, format)
}

// DocumentFlags are the flags of a program that reads a state document and writes it
// back: --state, --in-place, -o with the given formats, and -v.
func DocumentFlags(formats ...string) []cli.Flag {
	return append(StateFlags(), OutputFlag(formats...), VerboseFlag())
}

// SchemaNote is the line every document-reading program's help ends its description with.
var SchemaNote = fmt.Sprintf("The state document (JSON or YAML, version 1) is described by\n%s in the bkit repository.", state.SchemaPath)

// ReadStage is the preamble every client stage program (bsched, bfetch, bdevices, brpc)
// runs before it decides: no stray arguments, --now (the wall clock when absent), the
// program's own flag checks (check, which may be nil: bad flags are told before any
// input is read), then the state document from --state or standard input.
func ReadStage(cmd *cli.Command, check func() error) (now float64, in *Input, err error) {
	if err := NoArgs(cmd); err != nil {
		return 0, nil, err
	}
	if now, err = Now(cmd); err != nil {
		return 0, nil, err
	}
	if check != nil {
		if err := check(); err != nil {
			return 0, nil, err
		}
	}
	in, err = ReadState(cmd)
	return now, in, err
}

// When shows a Unix time both as seconds (what documents hold, exactly as --now takes
// it) and as UTC, for the programs' tables.
func When(t float64) string {
	return fmt.Sprintf("%s (%s)", strconv.FormatFloat(t, 'f', -1, 64), time.Unix(int64(t), 0).UTC().Format(time.RFC3339))
}
