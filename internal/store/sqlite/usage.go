package sqlite

import (
	"context"

	"github.com/errandhq/errand/internal/store"
)

var (
	qUsageAdd = define(onWriter, `INSERT INTO usage_days
		(instance_id, day, added, webhook, function, channel, pull, bytes_kept, bytes_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (instance_id, day) DO UPDATE SET
			added = added + excluded.added,
			webhook = webhook + excluded.webhook,
			function = function + excluded.function,
			channel = channel + excluded.channel,
			pull = pull + excluded.pull,
			bytes_kept = CASE WHEN excluded.bytes_at > bytes_at THEN excluded.bytes_kept ELSE bytes_kept END,
			bytes_at = max(bytes_at, excluded.bytes_at)`)
	qUsageList = define(onReader, `SELECT day, added, webhook, function, channel, pull, bytes_kept, bytes_at
		FROM usage_days WHERE instance_id = ? AND day >= ? AND day < ? ORDER BY day`)
	qUsageBytes = define(onReader, `SELECT coalesce(sum(length(payload) + coalesce(length(params), 0) + coalesce(length(result), 0)), 0)
		FROM tasks WHERE instance_id = ?`)
)

// UsageAdd upserts the rows in one write transaction.
func (s *Store) UsageAdd(ctx context.Context, rows []store.UsageRow) error {
	if len(rows) == 0 {
		return nil
	}
	return s.write(ctx, func(w *wtx) error {
		for _, r := range rows {
			if _, err := w.exec(qUsageAdd, r.InstanceID, r.Day, r.Added, r.Webhook, r.Function, r.Channel, r.Pull, r.BytesKept, r.BytesAt); err != nil {
				return err
			}
		}
		return nil
	})
}

// UsageList reads the instance's days in [p.From, p.To).
func (s *Store) UsageList(ctx context.Context, p *store.UsageListParams) ([]store.UsageRow, error) {
	rows, err := s.reader(qUsageList).QueryContext(ctx, p.InstanceID, p.From, p.To)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []store.UsageRow
	for rows.Next() {
		r := store.UsageRow{InstanceID: p.InstanceID}
		if err := rows.Scan(&r.Day, &r.Added, &r.Webhook, &r.Function, &r.Channel, &r.Pull, &r.BytesKept, &r.BytesAt); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, r)
	}
	return out, interpretError(rows.Err())
}

// UsageBytes sums the stored sizes of the instance's tasks' JSON.
func (s *Store) UsageBytes(ctx context.Context, instanceID string) (int64, error) {
	var n int64
	err := s.reader(qUsageBytes).QueryRowContext(ctx, instanceID).Scan(&n)
	return n, interpretError(err)
}
