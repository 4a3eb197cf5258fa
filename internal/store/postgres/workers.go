package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/store"
)

// WorkersPut replaces p.Node's rows in one transaction of one round trip.
func (s *Store) WorkersPut(ctx context.Context, p *store.WorkersPutParams) error {
	var inst, fn []string
	var slots []int32
	for i, fns := range p.Served {
		for f, n := range fns {
			inst, fn, slots = append(inst, i), append(fn, f), append(slots, int32(n))
		}
	}
	return interpretError(pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`DELETE FROM workers WHERE node = $1 OR seen_at < $2`, p.Node, p.Forget)
		b.Queue(`INSERT INTO workers (instance_id, function, node, slots, seen_at)
			SELECT i, f, $4, n, $5 FROM unnest($1::text[], $2::text[], $3::int4[]) AS u(i, f, n)`,
			inst, fn, slots, p.Node, p.Now)
		return tx.SendBatch(ctx, b).Close()
	}))
}

// WorkersServed sums the live rows of the instance (and '*') by function.
func (s *Store) WorkersServed(ctx context.Context, p *store.WorkersServedParams) (map[string]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT function, sum(slots)::int8 FROM workers
		WHERE instance_id IN ($1, '*') AND seen_at > $2 GROUP BY function`, p.InstanceID, p.SeenAfter)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var f string
		var n int64
		if err := rows.Scan(&f, &n); err != nil {
			return nil, interpretError(err)
		}
		out[f] = int(n)
	}
	return out, interpretError(rows.Err())
}
