package sqlite

import (
	"context"

	"github.com/errandhq/errand/internal/store"
)

var (
	qWorkersDeleteNode = define(onWriter, `DELETE FROM workers WHERE node = ?`)
	qWorkersForget     = define(onWriter, `DELETE FROM workers WHERE seen_at < ?`)
	qWorkersInsert     = define(onWriter, `INSERT INTO workers (instance_id, function, node, slots, seen_at) VALUES (?, ?, ?, ?, ?)`)
	qWorkersServed     = define(onReader, `SELECT function, sum(slots) FROM workers
		WHERE instance_id IN (?, '*') AND seen_at > ? GROUP BY function`)
)

// WorkersPut replaces p.Node's rows in one write transaction.
func (s *Store) WorkersPut(ctx context.Context, p *store.WorkersPutParams) error {
	return s.write(ctx, func(w *wtx) error {
		if _, err := w.exec(qWorkersDeleteNode, p.Node); err != nil {
			return err
		}
		if _, err := w.exec(qWorkersForget, p.Forget); err != nil {
			return err
		}
		for inst, fns := range p.Served {
			for fn, slots := range fns {
				if _, err := w.exec(qWorkersInsert, inst, fn, p.Node, slots, p.Now); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// WorkersServed sums the live rows of the instance (and '*') by function.
func (s *Store) WorkersServed(ctx context.Context, p *store.WorkersServedParams) (map[string]int, error) {
	rows, err := s.reader(qWorkersServed).QueryContext(ctx, p.InstanceID, p.SeenAfter)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var fn string
		var n int
		if err := rows.Scan(&fn, &n); err != nil {
			return nil, interpretError(err)
		}
		out[fn] = n
	}
	return out, interpretError(rows.Err())
}
