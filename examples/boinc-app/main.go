// Command boinc-app is an example application for a bkit project that real BOINC
// clients run, written without BOINC's library: it reads its input file, writes its
// output file (the input in upper case, with a line counting its bytes), writes the
// finish file the client waits for, and exits.
//
// A BOINC client runs an app in a slot directory. For each file of the job it puts
// there a file under the name the app opens ("in", "out"); that file is either the
// data itself (copy_file) or a link file holding <soft_link>PATH</soft_link>, PATH
// being where the data really is (relative to the slot). resolve follows such a link.
// When the app is done it writes "boinc_finish_called" holding its exit status: a
// client treats an app that exits without it as having crashed, and runs it again.
//
// To wrap an existing program, keep resolve and finish and replace transform with a
// call of the program (os/exec) on the resolved paths.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if err := run("."); err != nil {
		fmt.Fprintln(os.Stderr, "boinc-app:", err)
		finish(".", 1)
		os.Exit(1)
	}
	finish(".", 0)
}

func run(slot string) error {
	in, err := resolve(slot, "in")
	if err != nil {
		return err
	}
	out, err := resolve(slot, "out")
	if err != nil {
		return err
	}
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	return os.WriteFile(out, transform(data), 0o644)
}

// transform is the app's computation.
func transform(data []byte) []byte {
	return append(bytes.ToUpper(data), fmt.Sprintf("\n%d bytes\n", len(data))...)
}

// resolve returns the path of the file the app opens as name: the target of the
// slot's link file, or the file itself when the client copied it (or when there is
// no file yet: an output the client did not link).
func resolve(slot, name string) (string, error) {
	p := filepath.Join(slot, name)
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return p, nil
	}
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if !strings.HasPrefix(s, "<soft_link>") || !strings.HasSuffix(s, "</soft_link>") {
		return p, nil
	}
	target := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(s, "<soft_link>"), "</soft_link>"))
	if !filepath.IsAbs(target) {
		target = filepath.Join(slot, target)
	}
	return target, nil
}

// finish writes the finish file the client waits for, then the app exits.
func finish(slot string, status int) {
	os.WriteFile(filepath.Join(slot, "boinc_finish_called"), []byte(fmt.Sprintf("%d\n", status)), 0o644)
}
