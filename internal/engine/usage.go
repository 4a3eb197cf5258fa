package engine

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// dayMs is one UTC day in epoch milliseconds.
const dayMs = int64(24 * time.Hour / time.Millisecond)

// usageKind is what one usage count counts.
type usageKind int

const (
	usageAdded usageKind = iota
	usageWebhook
	usageFunction
	usageChannel
	usagePull
)

// usageKey is one pending row: an instance's day.
type usageKey struct {
	instanceID string
	day        int64
}

// usageDeps is what the usage counter uses.
type usageDeps struct {
	store store.Store
	clock clock.Clock
	log   *slog.Logger
	// every is how often the counts are flushed (default 2 s: what a
	// kill -9 loses; a node in a crash loop that flushed every 10 s lost
	// nearly all its counts).
	every time.Duration
	// sampleEvery is how often the bytes every instance keeps are sampled
	// (default 1 h; also once at Start).
	sampleEvery time.Duration
}

// Usage counts what each instance uses (tasks added, deliveries by target
// kind) in memory, per UTC day, and adds the counts to the store's
// per-day rows every few seconds and at Stop: the hot path only takes a
// mutex and bumps a number. Rows are upserted, so every node's counts add
// up. It also samples the bytes each instance keeps, once an hour.
type Usage struct {
	runner
	usageDeps
	mu      sync.Mutex
	pending map[usageKey]*store.UsageRow
	flushMu sync.Mutex // one flush at a time
	// flushes counts the run loop's flushes and asleep reports when it
	// sleeps until its next flush, for tests (nil in production).
	flushes *progress[int]
	asleep  *progress[sleepReport]
}

// UsageFlushEvery is how often a node adds its counts to the store's rows.
const UsageFlushEvery = 2 * time.Second

func newUsage(d usageDeps) *Usage {
	d.every = cmp.Or(d.every, UsageFlushEvery)
	d.sampleEvery = cmp.Or(d.sampleEvery, time.Hour)
	return &Usage{usageDeps: d, pending: map[usageKey]*store.UsageRow{}}
}

// dayStart is the epoch ms of the start (00:00 UTC) of the day of ms.
func dayStart(ms int64) int64 { return ms - ((ms%dayMs)+dayMs)%dayMs }

// count adds n of kind to the instance's counts of today.
func (u *Usage) count(instanceID string, kind usageKind, n int64) {
	if n == 0 || instanceID == "" {
		return
	}
	k := usageKey{instanceID, dayStart(u.clock.Now().UnixMilli())}
	u.mu.Lock()
	defer u.mu.Unlock()
	r := u.pending[k]
	if r == nil {
		r = &store.UsageRow{InstanceID: k.instanceID, Day: k.day}
		u.pending[k] = r
	}
	switch kind {
	case usageAdded:
		r.Added += n
	case usageWebhook:
		r.Webhook += n
	case usageFunction:
		r.Function += n
	case usageChannel:
		r.Channel += n
	case usagePull:
		r.Pull += n
	}
}

// countDelivery counts one attempt started toward target.
func (u *Usage) countDelivery(instanceID string, target *task.Target) {
	switch {
	case target == nil:
	case target.Webhook != "":
		u.count(instanceID, usageWebhook, 1)
	case target.Function != "":
		u.count(instanceID, usageFunction, 1)
	case target.Channel != "":
		u.count(instanceID, usageChannel, 1)
	}
}

// unflushed returns this node's counts of the instance not yet flushed.
func (u *Usage) unflushed(instanceID string) []store.UsageRow {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []store.UsageRow
	for k, r := range u.pending {
		if k.instanceID == instanceID {
			out = append(out, *r)
		}
	}
	return out
}

// Start samples the bytes kept, then flushes every interval, until Stop.
func (u *Usage) Start(ctx context.Context) error { return u.start(ctx, u.run) }

func (u *Usage) run(ctx context.Context) {
	nextSample := u.clock.Now()
	for {
		if now := u.clock.Now(); !now.Before(nextSample) {
			if err := u.Sample(ctx); err != nil && ctx.Err() == nil {
				u.log.Warn("usage sample failed", "err", err)
			}
			nextSample = now.Add(u.sampleEvery)
		}
		now := u.clock.Now()
		wakeAt := now.Add(u.every)
		u.asleep.report(sleepReport{Now: now, WakeAt: wakeAt})
		if !sleep(ctx, u.clock, wakeAt, nil, nil) {
			return
		}
		if err := u.Flush(ctx); err != nil && ctx.Err() == nil {
			u.log.Warn("usage flush failed; the counts are kept for the next", "err", err)
		}
		u.flushes.update(func(n *int) { *n++ })
	}
}

// Stop ends the loop and flushes what was counted since the last flush.
func (u *Usage) Stop() {
	u.runner.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := u.Flush(ctx); err != nil {
		u.log.Warn("usage flush at stop failed; these counts are lost", "err", err)
	}
}

// Flush adds the pending counts to the store in one upsert. On failure the
// counts go back to pending, to be added by the next flush.
func (u *Usage) Flush(ctx context.Context) error {
	u.flushMu.Lock()
	defer u.flushMu.Unlock()
	u.mu.Lock()
	taken := u.pending
	u.pending = map[usageKey]*store.UsageRow{}
	u.mu.Unlock()
	if len(taken) == 0 {
		return nil
	}
	rows := make([]store.UsageRow, 0, len(taken))
	for _, r := range taken {
		rows = append(rows, *r)
	}
	slices.SortFunc(rows, func(a, b store.UsageRow) int {
		return cmp.Or(cmp.Compare(a.InstanceID, b.InstanceID), cmp.Compare(a.Day, b.Day))
	})
	err := u.store.UsageAdd(ctx, rows)
	if err != nil {
		u.mu.Lock()
		for _, r := range rows {
			u.pending[usageKey{r.InstanceID, r.Day}] = mergeUsage(u.pending[usageKey{r.InstanceID, r.Day}], r)
		}
		u.mu.Unlock()
	}
	return err
}

// mergeUsage adds r's counts to into (nil: a copy of r).
func mergeUsage(into *store.UsageRow, r store.UsageRow) *store.UsageRow {
	if into == nil {
		return &r
	}
	into.Added += r.Added
	into.Webhook += r.Webhook
	into.Function += r.Function
	into.Channel += r.Channel
	into.Pull += r.Pull
	return into
}

// Sample records, for every instance, the bytes it keeps now on today's
// row.
func (u *Usage) Sample(ctx context.Context) error {
	qs, err := u.store.QueueListAll(ctx)
	if err != nil {
		return err
	}
	now := u.clock.Now().UnixMilli()
	var rows []store.UsageRow
	seen := map[string]bool{}
	for _, q := range qs {
		if seen[q.InstanceID] {
			continue
		}
		seen[q.InstanceID] = true
		n, err := u.store.UsageBytes(ctx, q.InstanceID)
		if err != nil {
			return err
		}
		rows = append(rows, store.UsageRow{InstanceID: q.InstanceID, Day: dayStart(now), BytesKept: n, BytesAt: max(now, 1)})
	}
	slices.SortFunc(rows, func(a, b store.UsageRow) int { return cmp.Compare(a.InstanceID, b.InstanceID) })
	return u.store.UsageAdd(ctx, rows)
}

// Usage returns the usage service (tests flush and sample with it).
func (e *Engine) Usage() *Usage { return e.usage }
