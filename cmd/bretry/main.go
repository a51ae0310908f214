// Command bretry is the project's result retry job (seed 003) and its validator; see
// package github.com/bkit/bkit/lib/programs/bretry.
package main

import (
	"os"

	"github.com/bkit/bkit/lib/programs/bretry"
)

func main() {
	os.Exit(bretry.Main(os.Args, os.Stdin, os.Stdout, os.Stderr))
}
