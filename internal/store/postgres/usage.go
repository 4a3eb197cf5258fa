package postgres

import (
	"context"

	"github.com/errandhq/errand/internal/store"
)

// UsageAdd upserts the rows in one statement (one transaction, one round
// trip), in key order so two nodes flushing at once never deadlock.
func (s *Store) UsageAdd(ctx context.Context, rows []store.UsageRow) error {
	if len(rows) == 0 {
		return nil
	}
	n := len(rows)
	inst := make([]string, n)
	day, added, webhook, function, channel, pull, bytesKept, bytesAt := make([]int64, n), make([]int64, n),
		make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for i, r := range rows {
		inst[i], day[i], added[i], webhook[i], function[i] = r.InstanceID, r.Day, r.Added, r.Webhook, r.Function
		channel[i], pull[i], bytesKept[i], bytesAt[i] = r.Channel, r.Pull, r.BytesKept, r.BytesAt
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO usage_days AS u
		(instance_id, day, added, webhook, function, channel, pull, bytes_kept, bytes_at)
		SELECT * FROM unnest($1::text[], $2::int8[], $3::int8[], $4::int8[], $5::int8[], $6::int8[], $7::int8[], $8::int8[], $9::int8[])
		ORDER BY 1, 2
		ON CONFLICT (instance_id, day) DO UPDATE SET
			added = u.added + excluded.added,
			webhook = u.webhook + excluded.webhook,
			function = u.function + excluded.function,
			channel = u.channel + excluded.channel,
			pull = u.pull + excluded.pull,
			bytes_kept = CASE WHEN excluded.bytes_at > u.bytes_at THEN excluded.bytes_kept ELSE u.bytes_kept END,
			bytes_at = greatest(u.bytes_at, excluded.bytes_at)`,
		inst, day, added, webhook, function, channel, pull, bytesKept, bytesAt)
	return interpretError(err)
}

// UsageList reads the instance's days in [p.From, p.To).
func (s *Store) UsageList(ctx context.Context, p *store.UsageListParams) ([]store.UsageRow, error) {
	rows, err := s.pool.Query(ctx, `SELECT day, added, webhook, function, channel, pull, bytes_kept, bytes_at
		FROM usage_days WHERE instance_id = $1 AND day >= $2 AND day < $3 ORDER BY day`, p.InstanceID, p.From, p.To)
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
	err := s.pool.QueryRow(ctx, `SELECT coalesce(sum(octet_length(payload) + coalesce(octet_length(params), 0) + coalesce(octet_length(result), 0)), 0)::int8
		FROM tasks WHERE instance_id = $1`, instanceID).Scan(&n)
	return n, interpretError(err)
}
