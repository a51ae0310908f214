// Command blocality is seed 004's locality scheduling around the scheduler; see package
// github.com/bkit/bkit/lib/programs/blocality.
package main

import (
	"os"

	"github.com/bkit/bkit/lib/programs/blocality"
)

func main() {
	os.Exit(blocality.Main(os.Args, os.Stdin, os.Stdout, os.Stderr))
}
