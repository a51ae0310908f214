// Command bsim emulates a BOINC client over simulated time and prints its figures of merit.
package main

import (
	"os"

	"github.com/bkit/bkit/lib/programs/bsim"
)

func main() { os.Exit(bsim.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) }
