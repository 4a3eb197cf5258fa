package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var (
	// sqlNodeBeat upserts the node's row (a HOT update: beat_at is not
	// indexed) and reads the other nodes' rows, each with whether it has
	// been silent since $3, in one statement and one round trip. The
	// SELECT sees the table as the statement began, without this beat: the
	// node's own row is left out by id. The table holds a row a node.
	sqlNodeBeat = `WITH beat AS (
			INSERT INTO nodes (id, started_at, beat_at) VALUES ($1, $2, $2)
			ON CONFLICT (id) DO UPDATE SET beat_at = greatest(nodes.beat_at, excluded.beat_at)
		)
		SELECT id, beat_at <= $3 FROM nodes WHERE id <> $1 ORDER BY id`
	sqlNodeForget = `DELETE FROM nodes WHERE id = ANY ($1::text[]) AND beat_at <= $2`
	// sqlHeldBy finds the RUNNING push tasks whose lease names one of the
	// nodes: per push queue, its RUNNING rows through tasks_running (the
	// work in flight), each row's node read from its lease id. It runs
	// only when a node was declared dead.
	sqlHeldBy = `SELECT ` + cols("t", taskCols) + `
		FROM queues AS q CROSS JOIN LATERAL (
			SELECT * FROM tasks AS t
			WHERE t.instance_id = q.instance_id AND t.queue = q.name
			  AND t.state = 'RUNNING' AND NOT t.pull
			  AND split_part(t.lease_id, '.', 1) = ANY ($1::text[])
			LIMIT $2) AS t
		WHERE q.mode = 'push'
		LIMIT $2`
)

// NodeBeat records p.Node's beat and returns the other nodes' rows, the
// silent ones by id, in one statement.
func (s *Store) NodeBeat(ctx context.Context, p *store.NodeBeatParams) (store.NodeBeatResult, error) {
	var r store.NodeBeatResult
	rows, err := s.pool.Query(ctx, sqlNodeBeat, p.Node, p.Now, p.DeadBefore)
	if err != nil {
		return r, interpretError(err)
	}
	var (
		id     string
		silent bool
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &silent}, func() error {
		r.Others++
		if silent {
			r.Dead = append(r.Dead, id)
		}
		return nil
	})
	return r, interpretError(err)
}

// NodeForget removes the rows of p.Nodes still silent since p.DeadBefore.
func (s *Store) NodeForget(ctx context.Context, p *store.NodeForgetParams) error {
	if len(p.Nodes) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, sqlNodeForget, p.Nodes, p.DeadBefore)
	return interpretError(err)
}

// TaskHeldBy returns up to p.Limit RUNNING push tasks held by p.Nodes.
func (s *Store) TaskHeldBy(ctx context.Context, p *store.HeldByParams) ([]*task.Task, error) {
	if p.Limit <= 0 || len(p.Nodes) == 0 {
		return []*task.Task{}, nil
	}
	rows, err := s.pool.Query(ctx, sqlHeldBy, p.Nodes, p.Limit)
	if err != nil {
		return nil, interpretError(err)
	}
	return scanTasks(rows, true)
}
