// Command bdevices handles seed 002's processing resources on the client: it describes
// the machine, keeps per-resource debts and backoffs and chooses per-resource work
// requests over a client state document.
package main

import (
	"os"

	"github.com/bkit/bkit/lib/programs/bdevices"
)

func main() { os.Exit(bdevices.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) }
