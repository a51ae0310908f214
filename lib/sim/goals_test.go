package sim

import (
	"testing"

	"github.com/bkit/bkit/lib/state"
)

// TestGoalsReplyKeepsD: policy goals takes a reply without jobs as goals.ApplyReply does
// (D(P,R) kept, the resource backed off), where seed takes seed 002's rule (D cleared).
func TestGoalsReplyKeepsD(t *testing.T) {
	for _, c := range []struct {
		policy string
		keep   bool
	}{{"goals", true}, {"seed", false}} {
		doc := &state.Document{
			Version:  1,
			Host:     state.Host{Resources: []state.Resource{{Type: "cpu", Instances: 1, Flops: 1e9}}},
			Projects: []state.Project{{Name: "A", ResourceShare: 1, Resources: []state.ProjectResource{{Type: "cpu", AccumulateDebt: true}}}},
		}
		p := policies[c.policy]()
		p.Replied(doc, RPC{Project: 0, Request: state.WorkRequest{Project: "A", CPUReqSecs: 100}}, Reply{Jobs: map[string]int{}}, 1000)
		pr := &doc.Projects[0].Resources[0]
		if pr.AccumulateDebt != c.keep {
			t.Errorf("%s: D(A,cpu) %v after a reply without jobs, want %v", c.policy, pr.AccumulateDebt, c.keep)
		}
		if pr.BackoffUntil <= 1000 {
			t.Errorf("%s: the CPU not backed off (until %g)", c.policy, pr.BackoffUntil)
		}
	}
}
