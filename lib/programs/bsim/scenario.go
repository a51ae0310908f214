package bsim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/bkit/bkit/lib/boincxml"
	"github.com/bkit/bkit/lib/input"
	"github.com/bkit/bkit/lib/limits"
	"github.com/bkit/bkit/lib/scenario"
	"github.com/bkit/bkit/lib/state"
)

// The SCENARIO argument of bsim's commands is either format, told apart by what the
// path is: a directory is a BOINC client emulator scenario (lib/boincxml reads it), a
// file a bkit scenario file (lib/scenario). The choice is bsim's, which is why it is
// made here and not in either reader: each reader knows one format, and lib/boincxml
// fills lib/scenario's model, so lib/scenario cannot call it.

// readScenario reads the scenario at path, refusing a file of more than limit bytes (a
// *limits.TooLargeError). Invalid input, including a path that does not exist, is
// marked with input.BadInput (exit status 2); other I/O errors are returned as they are
// (status 1). errors.As with a *state.Error finds a scenario file's problems.
func readScenario(path string, limit int64) (*scenario.Scenario, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, ioError(path, err)
	}
	if fi.IsDir() {
		sc, err := boincxml.LoadScenarioLimit(path, limit)
		if err != nil {
			return nil, classify(err)
		}
		return sc, nil
	}
	data, err := limits.ReadFile(path, limit)
	if limits.IsTooLarge(err) {
		return nil, input.BadInput(err)
	}
	if err != nil {
		return nil, ioError(path, err)
	}
	sc, err := scenario.Decode(data, path)
	if err != nil {
		return nil, input.BadInput(err)
	}
	return sc, nil
}

// ioError names path in an I/O error; a path that does not exist is bad input.
func ioError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	err = fmt.Errorf("%s: %w", path, err)
	if errors.Is(err, fs.ErrNotExist) {
		return input.BadInput(err)
	}
	return err
}

// classify marks a scenario directory's error: what the system reports (a missing file
// aside) is an I/O error, everything else is an invalid scenario.
func classify(err error) error {
	var errno syscall.Errno
	var pe *fs.PathError
	if !errors.Is(err, fs.ErrNotExist) && (errors.As(err, &errno) || errors.As(err, &pe)) {
		return err
	}
	return input.BadInput(err)
}

// exportScenario converts the scenario at path — a BOINC client emulator scenario
// directory, or a scenario file to re-encode — into a bkit scenario file in the given
// format. Apps without an app version (which a directory may declare but whose jobs
// can never be made) are left out by the reader; the rest is written in its canonical form
// (scenario.Canonical: what differs from the defaults, and every app's job parameters,
// spelt out). A YAML file starts with a comment naming its source. Errors are
// readScenario's.
func exportScenario(path string, format state.Format, limit int64) ([]byte, error) {
	sc, err := readScenario(path, limit)
	if err != nil {
		return nil, err
	}
	// An app without a version, which a file may not hold, is not read (lib/boincxml
	// leaves it out, as BOINC's emulator does).
	sc = sc.Canonical()
	data, err := scenario.Encode(sc, format)
	if err != nil {
		return nil, err
	}
	if format == state.YAML {
		data = append([]byte("# bkit scenario file (docs/scenario-file.md), converted from "+strings.ReplaceAll(path, "\n", " ")+"\n"), data...)
	}
	return data, nil
}
