// Command bsim-plot draws bsim's pictures (bsim run --plot, bsim compare --plot): bsim
// runs it with the run's trace on standard input.
package main

import (
	"os"

	"github.com/bkit/bkit/lib/programs/bsimplot"
)

func main() { os.Exit(bsimplot.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) }
