package id

import (
	"sort"
	"testing"
	"time"
)

func TestNewSortsAndIsUnique(t *testing.T) {
	now := time.UnixMilli(1_790_000_000_000)
	var ids []string
	seen := map[string]bool{}
	for i := range 5000 {
		ids = append(ids, New(now.Add(time.Duration(i/1000)*time.Millisecond)))
	}
	for _, s := range ids {
		if len(s) != 21 || seen[s] {
			t.Fatalf("bad or repeated id %q", s)
		}
		seen[s] = true
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatal("ids made in order do not sort in order")
	}
	if a, b := New(now), New(now.Add(time.Millisecond)); a >= b {
		t.Fatalf("%s made before %s sorts after it", a, b)
	}
}

func TestKeys(t *testing.T) {
	if k := WebhookKey(); len(k) != 50 || k[:6] != "whsec_" {
		t.Fatalf("%q", k)
	}
	if a, b := Lease(), Lease(); a == b {
		t.Fatal("leases repeat")
	}
}
