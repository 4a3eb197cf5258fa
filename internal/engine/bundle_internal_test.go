package engine

import (
	"testing"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// TestBundleCheckLeavesTheBundle: checking a bundle applies each queue's
// settings to a scratch queue, and the target check it runs (header names
// made canonical, hidden values filled or left out) works on a copy: the
// bundle itself is as it was read.
func TestBundleCheckLeavesTheBundle(t *testing.T) {
	h := map[string]string{"x-api-key": "k1"}
	b := &Bundle{Version: BundleVersion, Instances: []BundleInstance{{Name: "jobs", Settings: BundleSettings(task.DefaultSettings()),
		Queues: []BundleQueue{{Name: "api", Mode: task.ModePush, Target: &task.Target{Webhook: "https://example.com/in", Headers: h},
			MaxAttempts: 10, MinBackoffSeconds: 1, MaxBackoffSeconds: 10, DeadlineSeconds: 60}}}}}
	b.Instances[0].Settings.RateLimit = 0
	if err := b.Check(task.URLRules{}); err != nil {
		t.Fatal(err)
	}
	if got := b.Instances[0].Queues[0].Target.Headers; len(got) != 1 || got["x-api-key"] != "k1" {
		t.Fatalf("the check changed the bundle's headers: %v", got)
	}
	h["Authorization"] = errandapi.HiddenHeaderValue // now one to leave out too
	q := task.NewQueue("", "api", task.ModePush)
	bq, _ := b.Instances[0].Queues[0].WithoutHidden("jobs", nil)
	if err := bq.patch().Apply(q, true, task.URLRules{}); err != nil || q.Target.Headers["X-Api-Key"] != "k1" || len(q.Target.Headers) != 1 {
		t.Fatalf("applied: %v %v", q.Target, err)
	}
	if got := b.Instances[0].Queues[0].Target.Headers; got["x-api-key"] != "k1" || len(got) != 2 {
		t.Fatalf("applying the patch changed the bundle's headers: %v", got)
	}
}
