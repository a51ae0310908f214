// Command brpc decides when and whom the client contacts and performs scheduler RPC
// sessions over HTTP (seed 000's scheduler RPC timing and retry) over a client state
// document.
package main

import (
	"os"

	"github.com/bkit/bkit/lib/programs/brpc"
)

func main() { os.Exit(brpc.Main(os.Args, os.Stdin, os.Stdout, os.Stderr)) }
