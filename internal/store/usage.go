package store

import "context"

// UsageStore keeps each instance's usage per UTC day: the counts that the
// nodes add up in memory and flush in batches, and a sample of the bytes
// the instance keeps.
type UsageStore interface {
	// UsageAdd adds each row's counts to its (instance, day) row, creating
	// it, in one transaction: two nodes flushing the same day both count.
	// The rows of one call name distinct (instance, day) pairs.
	// A row with BytesAt > 0 also carries a sample of the bytes kept, which
	// replaces the stored one when it is newer (BytesAt later).
	UsageAdd(ctx context.Context, rows []UsageRow) error
	// UsageList returns an instance's rows of days p.From ≤ day < p.To, by
	// day.
	UsageList(ctx context.Context, p *UsageListParams) ([]UsageRow, error)
	// UsageBytes returns the bytes an instance keeps now: the payloads,
	// params and results of its tasks, as stored.
	UsageBytes(ctx context.Context, instanceID string) (int64, error)
}

// UsageRow is one instance's usage on one UTC day, or an increment of it.
type UsageRow struct {
	InstanceID string
	// Day is the epoch ms of the day's start (00:00 UTC).
	Day int64
	// Added counts the tasks stored.
	Added int64
	// Deliveries by the kind of target: every attempt started.
	Webhook  int64
	Function int64
	Channel  int64
	// Pull counts the tasks handed to pull workers by leases.
	Pull int64
	// BytesKept is the latest sample of the bytes the instance keeps, taken
	// at BytesAt (epoch ms; 0 when the row carries no sample).
	BytesKept int64
	BytesAt   int64
}

// UsageListParams selects the days of an instance.
type UsageListParams struct {
	InstanceID string
	From, To   int64
}
