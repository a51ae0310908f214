// Command gen-state writes a synthetic state document for benchmarks:
//
//	go run ./scripts/gen-state -projects 100 -tasks 10000 -cpus 16 > /tmp/big.json
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/bkit/bkit/lib/state"
)

func main() {
	projects := flag.Int("projects", 100, "number of projects")
	tasks := flag.Int("tasks", 10000, "number of tasks")
	cpus := flag.Int("cpus", 16, "number of CPUs")
	format := flag.String("o", "json", "json or yaml")
	flag.Parse()
	data, err := state.Encode(state.Synthetic(*projects, *tasks, *cpus), state.Format(*format))
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen-state:", err)
		os.Exit(1)
	}
	os.Stdout.Write(data)
}
