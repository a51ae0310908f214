// Command bfetch decides whether the client needs work and how much to ask each project
// for (seed 001's work fetch policy) over a client state document.
package main

import (
	"os"

	"github.com/bkit/bkit/lib/programs/bfetch"
)

func main() { os.Exit(bfetch.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) }
