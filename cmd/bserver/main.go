// Command bserver is a project's database and scheduler endpoint; see package
// github.com/bkit/bkit/lib/programs/bserver.
package main

import (
	"os"

	"github.com/bkit/bkit/lib/programs/bserver"
)

func main() {
	os.Exit(bserver.Main(os.Args, os.Stdin, os.Stdout, os.Stderr))
}
