package engine

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
)

// TestUsageReportFoldsTheMonth: rows of one day add up (two nodes); rows
// of the month before count nothing but carry their last bytes sample into
// the 1st; a day without a sample keeps the day before's; today's bytes
// are the value now; the average is over the 1st to today.
func TestUsageReportFoldsTheMonth(t *testing.T) {
	t.Parallel()
	day := func(d int) int64 { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC).UnixMilli() }
	now := time.Date(2026, 11, 4, 13, 0, 0, 0, time.UTC)
	rows := []store.UsageRow{
		{Day: day(1) - dayMs, Added: 100, Webhook: 100, BytesKept: 400, BytesAt: day(1) - 1}, // Oct 31
		{Day: day(1) - 2*dayMs, BytesKept: 999, BytesAt: day(1) - dayMs - 1},                 // older: ignored
		{Day: day(2), Added: 2, Webhook: 1, Function: 2, BytesKept: 1000, BytesAt: day(2) + 10},
		{Day: day(2), Added: 3, Channel: 1, Pull: 4, BytesKept: 800, BytesAt: day(2) + 5}, // another node, older sample
		{Day: day(4), Added: 1},
		{Day: day(5), Added: 50}, // after today (a clock ahead): not in the days
	}
	u := usageReport(rows, now, 2000)
	if u.Month != "2026-11" || u.From != day(1) || u.To != time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixMilli() {
		t.Fatalf("month %s %d %d", u.Month, u.From, u.To)
	}
	if len(u.Days) != 4 || u.Days[0].Date != "2026-11-01" || u.Days[3].Date != "2026-11-04" || u.Days[3].Start != day(4) {
		t.Fatalf("days %+v", u.Days)
	}
	var kept []int64
	for _, d := range u.Days {
		kept = append(kept, d.BytesKept)
	}
	if want := []int64{400, 1000, 1000, 2000}; !slices.Equal(kept, want) {
		t.Fatalf("bytes kept by day %v; want %v", kept, want)
	}
	if u.AverageBytesKept != (400+1000+1000+2000)/4 || u.BytesKept != 2000 {
		t.Fatalf("average %d, now %d", u.AverageBytesKept, u.BytesKept)
	}
	if u.TasksAdded != 6 || u.Days[1].TasksAdded != 5 || u.Days[3].TasksAdded != 1 {
		t.Fatalf("added %d, by day %+v", u.TasksAdded, u.Days)
	}
	if d := u.Deliveries; d.Webhook != 1 || d.Function != 2 || d.Channel != 1 || d.Pull != 4 || d.Total != 8 {
		t.Fatalf("deliveries %+v", d)
	}
	if d := u.Days[1].Deliveries; d.Total != 8 {
		t.Fatalf("day 2 deliveries %+v", d)
	}
	// On the 1st at 00:00 the month has one day.
	if u := usageReport(nil, time.UnixMilli(day(1)).UTC(), 5); len(u.Days) != 1 || u.AverageBytesKept != 5 {
		t.Fatalf("first instant of the month: %+v", u)
	}
}

func TestDayStart(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ ms, want int64 }{{0, 0}, {dayMs - 1, 0}, {dayMs, dayMs}, {-1, -dayMs}} {
		if got := dayStart(c.ms); got != c.want {
			t.Errorf("dayStart(%d) = %d; want %d", c.ms, got, c.want)
		}
	}
}

// BenchmarkUsageCount is the cost usage adds to an add or an attempt: one
// count, from every core at once.
func BenchmarkUsageCount(b *testing.B) {
	u := newUsage(usageDeps{clock: clock.NewFake(time.UnixMilli(1_790_000_000_000))})
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			u.count("01k3250r00c577i4opr71", usageWebhook, 1)
		}
	})
}

// failingUsage is a real store whose UsageAdd fails while down is set, as
// a database outage would fail it, after calling during (if set): what
// happens while the flush is in flight.
type failingUsage struct {
	store.Store
	down   bool
	during func()
}

func (f *failingUsage) UsageAdd(ctx context.Context, rows []store.UsageRow) error {
	if f.during != nil {
		f.during()
	}
	if f.down {
		return task.Errorf(task.CodeUnavailable, "the store is unreachable; try again")
	}
	return f.Store.UsageAdd(ctx, rows)
}

// TestUsageFlushFailureKeepsCounts: a flush the store refuses puts its
// counts back, adding them to those counted while it was in flight, where
// the report still finds them and later counts add to them; the next flush
// stores them all, once.
func TestUsageFlushFailureKeepsCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	raw, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	st := &failingUsage{Store: raw}
	now := time.Date(2026, 11, 4, 13, 0, 0, 0, time.UTC)
	u := newUsage(usageDeps{store: st, clock: clock.NewFake(now), log: slog.New(slog.DiscardHandler)})
	u.count("i1", usageAdded, 3)
	u.count("i1", usagePull, 2)
	u.count("i2", usageWebhook, 1)

	st.down = true
	st.during = func() { u.count("i1", usageAdded, 10) }
	if err := u.Flush(ctx); err == nil {
		t.Fatal("a flush the store refused answered nil")
	}
	st.during = nil
	if got := u.unflushed("i1"); len(got) != 1 || got[0].Added != 13 || got[0].Pull != 2 {
		t.Fatalf("i1's counts after the failed flush: %+v", got)
	}
	u.count("i1", usageAdded, 4)
	u.count("i2", usageFunction, 5)

	st.down = false
	if err := u.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := u.unflushed("i1"); len(got) != 0 {
		t.Fatalf("still pending after the flush: %+v", got)
	}
	for _, want := range []store.UsageRow{
		{InstanceID: "i1", Day: dayStart(now.UnixMilli()), Added: 17, Pull: 2},
		{InstanceID: "i2", Day: dayStart(now.UnixMilli()), Webhook: 1, Function: 5},
	} {
		rows, err := raw.UsageList(ctx, &store.UsageListParams{InstanceID: want.InstanceID, From: 0, To: now.UnixMilli() + dayMs})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0] != want {
			t.Fatalf("%s stored %+v; want [%+v]", want.InstanceID, rows, want)
		}
	}
}
