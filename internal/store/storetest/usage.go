package storetest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var usageCases = []testCase{
	{"AddList", testUsageAddList},
	{"Bytes", testUsageBytes},
}

// testUsageAddList: UsageAdd adds counts to the (instance, day) row, so two
// flushes of the same day (two nodes) add up; a newer bytes sample replaces
// an older one and an older never does; UsageList returns only the
// instance's days in range, by day; deleting the instance removes its rows.
func testUsageAddList(t *testing.T, e *env) {
	a := e.instance("acme", "jobs")
	b := e.instance("acme", "other")
	d0, d1 := T0-T0%Day, T0-T0%Day+Day
	add := func(rows ...store.UsageRow) {
		t.Helper()
		if err := e.s.UsageAdd(e.ctx, rows); err != nil {
			t.Fatalf("UsageAdd: %v", err)
		}
	}
	list := func(inst string, from, to int64) string {
		t.Helper()
		rows, err := e.s.UsageList(e.ctx, &store.UsageListParams{InstanceID: inst, From: from, To: to})
		if err != nil {
			t.Fatalf("UsageList: %v", err)
		}
		s := ""
		for _, r := range rows {
			s += fmt.Sprintf("[%d %d/%d/%d/%d/%d %d@%d]", (r.Day-d0)/Day, r.Added, r.Webhook, r.Function, r.Channel, r.Pull, r.BytesKept, r.BytesAt-T0)
		}
		return s
	}
	add(store.UsageRow{InstanceID: a.ID, Day: d0, Added: 3, Webhook: 2, Function: 1, Channel: 1, Pull: 4, BytesKept: 100, BytesAt: T0},
		store.UsageRow{InstanceID: b.ID, Day: d0, Added: 9})
	// A second node's flush of the same day, with an older sample, and the
	// next day's first counts.
	add(store.UsageRow{InstanceID: a.ID, Day: d0, Added: 1, Webhook: 1, Pull: 1, BytesKept: 50, BytesAt: T0 - 1},
		store.UsageRow{InstanceID: a.ID, Day: d1, Function: 5})
	if got, want := list(a.ID, d0, d1+Day), "[0 4/3/1/1/5 100@0][1 0/0/5/0/0 0@-1700000000000]"; got != want {
		t.Fatalf("rows %s; want %s", got, want)
	}
	add(store.UsageRow{InstanceID: a.ID, Day: d0, BytesKept: 70, BytesAt: T0 + 1}) // a newer sample
	if got, want := list(a.ID, d0, d1), "[0 4/3/1/1/5 70@1]"; got != want {
		t.Fatalf("rows of day 0 after a newer sample %s; want %s", got, want)
	}
	if got, want := list(b.ID, d0, d1+Day), "[0 9/0/0/0/0 0@-1700000000000]"; got != want {
		t.Fatalf("other instance's rows %s; want %s", got, want)
	}
	if err := e.s.UsageAdd(e.ctx, nil); err != nil {
		t.Fatalf("UsageAdd(nil): %v", err)
	}
	if err := e.s.InstanceDelete(e.ctx, store.InstanceRef{Org: "acme", Name: "jobs"}); err != nil {
		t.Fatal(err)
	}
	if got := list(a.ID, 0, d1+Day); got != "" {
		t.Fatalf("rows of a deleted instance: %s", got)
	}
}

// testUsageBytes: UsageBytes sums the payload, params and result bytes of
// the instance's tasks as stored, and nothing of another instance's.
func testUsageBytes(t *testing.T, e *env) {
	a := e.instance("acme", "jobs")
	b := e.instance("acme", "other")
	qa := e.queue(a, "work", task.ModePull)
	qb := e.queue(b, "work", task.ModePull)
	if n, err := e.s.UsageBytes(e.ctx, a.ID); err != nil || n != 0 {
		t.Fatalf("UsageBytes of an empty instance = %d, %v", n, err)
	}
	e.addN(qa, 3, T0, func(i int, in *task.AddInput) {
		in.Payload = json.RawMessage(`{"n":1}`) // 7 bytes
		if i == 0 {
			in.Params = json.RawMessage(`{"p":"xy"}`) // 10 bytes
		}
	})
	e.addN(qb, 5, T0, nil)
	if n, err := e.s.UsageBytes(e.ctx, a.ID); err != nil || n != 3*7+10 {
		t.Fatalf("UsageBytes = %d, %v; want %d", n, err, 3*7+10)
	}
}
