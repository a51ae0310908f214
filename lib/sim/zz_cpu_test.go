package sim

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

func threadCPU() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3 /* CLOCK_THREAD_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// TestZZCPU: thread CPU time per 10-day run, ZZCPU_ROUNDS rounds, scenario × policy
// interleaved; prints the median and min of each.
func TestZZCPU(t *testing.T) {
	if os.Getenv("ZZCPU") == "" {
		t.Skip()
	}
	runtime.LockOSThread()
	rounds, _ := strconv.Atoi(os.Getenv("ZZCPU_ROUNDS"))
	if rounds == 0 {
		rounds = 5
	}
	dirs := []string{publicExample, "../../scenarios/deadlines-4cpu", seed002GPU, "../../scenarios/down-2cpu", "../../scenarios/part-time-4cpu", share7525, "testdata/noisy"}
	if d := os.Getenv("ZZCPU_DIRS"); d != "" {
		dirs = nil
		for _, x := range splitComma(d) {
			dirs = append(dirs, x)
		}
	}
	em := os.Getenv("ZZCPU_EMULATE") != ""
	times := map[string][]time.Duration{}
	for range rounds {
		for _, dir := range dirs {
			for _, pol := range []string{"seed", "boinc"} {
				sc := load(t, dir)
				t0 := threadCPU()
				if _, err := Run(sc, Config{Duration: 10 * 86400, Delta: 60, Policy: pol, Seed: 1, EmulateBOINC: em}); err != nil {
					t.Fatal(err)
				}
				k := dir + " " + pol
				times[k] = append(times[k], threadCPU()-t0)
			}
		}
	}
	med := func(x []time.Duration) time.Duration {
		y := append([]time.Duration(nil), x...)
		sort.Slice(y, func(i, j int) bool { return y[i] < y[j] })
		return y[len(y)/2]
	}
	mn := func(x []time.Duration) time.Duration {
		m := x[0]
		for _, v := range x {
			m = min(m, v)
		}
		return m
	}
	for _, dir := range dirs {
		s, b := times[dir+" seed"], times[dir+" boinc"]
		fmt.Printf("ZZ %-36s seed med %6.1f min %6.1f ms | boinc med %6.1f min %6.1f ms | ratio med %.2f min %.2f\n", dir,
			ms(med(s)), ms(mn(s)), ms(med(b)), ms(mn(b)), ms(med(b))/ms(med(s)), ms(mn(b))/ms(mn(s)))
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}
