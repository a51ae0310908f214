// Command bsched runs one CPU scheduling pass (seed 001) over a client state document.
package main

import (
	"os"

	"github.com/bkit/bkit/lib/programs/bsched"
)

func main() { os.Exit(bsched.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) }
