package httpapi_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/engine"
)

// TestBundleTargetHeaders: an exported bundle holds a target's header
// names, never their values; imported where the queue is new, the queue
// comes without them, paused, and a note says to set them; imported where
// the queue's target already sends them to the same origin, they are kept
// and nothing changes.
func TestBundleTargetHeaders(t *testing.T) {
	b := setup(t)
	target := map[string]any{"webhook": "http://127.0.0.1:9/a", "headers": map[string]string{"Authorization": "Bearer s3cret", "X-Api-Key": "k1-s3cret"}}
	b.do("POST", "/v1/tasks/jobs/queues", map[string]any{"name": "api", "target": target}).want(t, 201, "")
	b.start()
	_, raw := b.exportJob(t)
	if strings.Contains(string(raw), "s3cret") || strings.Contains(string(raw), "k1-s3cret") {
		t.Fatalf("the bundle holds a header's value: %s", raw)
	}
	var bun engine.Bundle
	if err := json.Unmarshal(raw, &bun); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	note := "queue jobs/api is paused: its target's headers Authorization, X-Api-Key have values a bundle does not carry; set its target with them, then resume it"

	other := setup(t)
	for range 2 { // the second import changes nothing, and says so again
		rep, err := other.eng.ImportBundle(ctx, "dev", &bun)
		if err != nil || !slices.Equal(rep.Notes, []string{note}) || len(rep.Changed) > 1 {
			t.Fatalf("import: %+v %v", rep, err)
		}
	}
	q := other.do("GET", "/v1/tasks/jobs/queues/api", nil).want(t, 200, "").obj("queue")
	if q["paused"] != true || q["target"].(map[string]any)["headers"] != nil {
		t.Fatalf("imported queue: %v", q)
	}
	// Once the values are set, the same bundle keeps them and changes nothing.
	other.do("PATCH", "/v1/tasks/jobs/queues/api", map[string]any{"target": target, "paused": false}).want(t, 200, "")
	rep, err := other.eng.ImportBundle(ctx, "dev", &bun)
	if err != nil || len(rep.Notes) != 0 || len(rep.Changed) != 0 || !slices.Contains(rep.Left, "queue jobs/api") {
		t.Fatalf("import over the set values: %+v %v", rep, err)
	}
	v, err := other.eng.QueueGet(ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "api"})
	if err != nil || !reflect.DeepEqual(v.Queue.Target.Headers, map[string]string{"Authorization": "Bearer s3cret", "X-Api-Key": "k1-s3cret"}) {
		t.Fatalf("kept: %+v %v", v, err)
	}
	if h := bun.Instances[len(bun.Instances)-1].Queues; !slices.ContainsFunc(h, func(q engine.BundleQueue) bool {
		return q.Target != nil && q.Target.Headers["Authorization"] == errandapi.HiddenHeaderValue
	}) {
		t.Fatalf("the bundle does not name the headers: %s", raw)
	}
}
