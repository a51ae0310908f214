package bdevices

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/bkit/bkit/lib/state"
	"github.com/google/go-cmp/cmp"
)

const cannedSMI = `NVIDIA GeForce RTX 3080, 2, 2100, 10240
NVIDIA GeForce GTX 1080, 2, 1733, [N/A]
`

func TestParseNvidiaSMI(t *testing.T) {
	gpus, err := ParseNvidiaSMI([]byte(cannedSMI))
	if err != nil {
		t.Fatal(err)
	}
	want := []GPU{{"NVIDIA GeForce RTX 3080", 2100, 10240}, {"NVIDIA GeForce GTX 1080", 1733, 0}}
	if diff := cmp.Diff(want, gpus); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// The slowest: 2 × 2048 × 1733 MHz.
	r, ok := NvidiaResource(gpus, 0)
	if want := (state.Resource{Type: "NVIDIA", Instances: 2, Flops: 2 * 2048 * 1733e6}); !ok || r != want {
		t.Errorf("resource %+v, want %+v", r, want)
	}
	if r, _ := NvidiaResource(gpus, 3e13); r.Flops != 3e13 {
		t.Errorf("--gpu-flops not used: %+v", r)
	}
	if _, ok := NvidiaResource(nil, 0); ok {
		t.Error("no GPU gave a resource")
	}
	if _, err := ParseNvidiaSMI([]byte("just a name\n")); err == nil {
		t.Error("short line accepted")
	}
}

// TestDetectRunner runs detect with a canned nvidia-smi through the injectable runner.
func TestDetectRunner(t *testing.T) {
	oldRun, oldLook := Run, LookPath
	defer func() { Run, LookPath = oldRun, oldLook }()
	LookPath = func(string) (string, error) { return "/usr/bin/nvidia-smi", nil }
	var gotArgs []string
	Run = func(_ context.Context, name string, args ...string) ([]byte, error) {
		gotArgs = append([]string{name}, args...)
		return []byte(cannedSMI), nil
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"bdevices", "detect", "--ncpus", "8", "--cpu-flops", "4e9", "-o", "json"}, nil, &out, &errb); code != 0 {
		t.Fatalf("status %d: %s", code, errb.String())
	}
	doc, _, err := state.Decode(out.Bytes(), "detect")
	if err != nil {
		t.Fatal(err)
	}
	want := []state.Resource{{Type: "cpu", Instances: 8, Flops: 4e9}, {Type: "NVIDIA", Instances: 2, Flops: 2 * 2048 * 1733e6}}
	if diff := cmp.Diff(want, doc.Host.Resources); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if strings.Join(gotArgs, " ") != "/usr/bin/nvidia-smi "+strings.Join(nvidiaQuery, " ") {
		t.Errorf("ran %q", gotArgs)
	}
	// nvidia-smi failing (no driver) is no error: just no GPU.
	Run = func(context.Context, string, ...string) ([]byte, error) { return nil, errors.New("exit status 9") }
	out.Reset()
	errb.Reset()
	if code := Main([]string{"bdevices", "detect", "--cpu-flops", "4e9"}, nil, &out, &errb); code != 0 || strings.Contains(out.String(), "NVIDIA") {
		t.Errorf("status %d, output %s", code, out.String())
	}
	if !strings.Contains(errb.String(), "nvidia-smi failed") {
		t.Errorf("no warning: %q", errb.String())
	}
}

func TestMeasureCPUFlops(t *testing.T) {
	if f := MeasureCPUFlops(1); f <= 0 {
		t.Errorf("measured %g FLOPS", f)
	}
}

// FuzzParseNvidiaSMI: whatever nvidia-smi prints, parsing neither panics nor yields a
// negative or non-finite clock, and a resource made from it is valid.
func FuzzParseNvidiaSMI(f *testing.F) {
	f.Add([]byte(cannedSMI))
	f.Add([]byte("a, b, c, d\n,,,\n"))
	f.Add([]byte("GPU, with, comma, 1, NaN, Inf\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		gpus, err := ParseNvidiaSMI(data)
		if err != nil {
			return
		}
		for _, g := range gpus {
			if !(g.ClockMHz >= 0) || !(g.MemoryMiB >= 0) || g.ClockMHz > 1e308 {
				t.Fatalf("bad GPU %+v", g)
			}
		}
		if r, ok := NvidiaResource(gpus, 0); ok && (r.Instances != len(gpus) || !(r.Flops >= 0) || math.IsInf(r.Flops, 0)) {
			t.Fatalf("bad resource %+v", r)
		}
	})
}
