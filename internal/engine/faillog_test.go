package engine

import "testing"

func TestFailLogOneLinePerQueueAndWindow(t *testing.T) {
	var f failLog
	a, b := qkey{"i", "a"}, qkey{"i", "b"}
	check := func(k qkey, now int64, wantOK bool, wantSkipped int) {
		t.Helper()
		if ok, n := f.allow(k, now); ok != wantOK || n != wantSkipped {
			t.Fatalf("allow(%v, %d) = %v, %d; want %v, %d", k, now, ok, n, wantOK, wantSkipped)
		}
	}
	check(a, 1000, true, 0)
	check(a, 1001, false, 0)
	check(b, 1002, true, 0) // another queue has its own window
	check(a, 5000, false, 0)
	check(a, 10_999, false, 0)
	check(a, 11_000, true, 3) // the next line says how many were not logged
	check(a, 21_000, true, 0)
}
