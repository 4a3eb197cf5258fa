package sqlite

import (
	"context"
	"encoding/json"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var (
	qNodeBeat = define(onWriter, `INSERT INTO nodes (id, started_at, beat_at) VALUES (?1, ?2, ?2)
		ON CONFLICT (id) DO UPDATE SET beat_at = max(beat_at, excluded.beat_at)`)
	qNodesOther = define(onWriter, `SELECT id, beat_at <= ? FROM nodes WHERE id <> ? ORDER BY id`)
	qNodeForget = define(onWriter, `DELETE FROM nodes
		WHERE id IN (SELECT value FROM json_each(?)) AND beat_at <= ?`)
	// qHeldBy finds the RUNNING push tasks whose lease names one of the
	// nodes: per push queue, its RUNNING rows through tasks_running (the
	// work in flight), each row's node read from its lease id.
	qHeldBy = define(onReader, `SELECT `+cols("t", taskCols)+`
		FROM queues AS q CROSS JOIN tasks AS t
		WHERE q.mode = 'push' AND t.instance_id = q.instance_id AND t.queue = q.name
		  AND t.state = 'RUNNING' AND t.pull = 0
		  AND substr(t.lease_id, 1, instr(t.lease_id, '.') - 1) IN (SELECT value FROM json_each(?))
		LIMIT ?`)
)

// NodeBeat writes p.Node's beat and reads the other nodes' rows, the
// silent ones by id, in one write transaction.
func (s *Store) NodeBeat(ctx context.Context, p *store.NodeBeatParams) (store.NodeBeatResult, error) {
	var r store.NodeBeatResult
	err := s.write(ctx, func(w *wtx) error {
		if _, err := w.exec(qNodeBeat, p.Node, p.Now); err != nil {
			return err
		}
		rows, err := w.query(qNodesOther, p.DeadBefore, p.Node)
		if err != nil {
			return err
		}
		defer rows.Close()
		r = store.NodeBeatResult{}
		for rows.Next() {
			var (
				id     string
				silent bool
			)
			if err := rows.Scan(&id, &silent); err != nil {
				return interpretError(err)
			}
			r.Others++
			if silent {
				r.Dead = append(r.Dead, id)
			}
		}
		return interpretError(rows.Err())
	})
	return r, err
}

// NodeForget removes the rows of p.Nodes still silent since p.DeadBefore.
func (s *Store) NodeForget(ctx context.Context, p *store.NodeForgetParams) error {
	if len(p.Nodes) == 0 {
		return nil
	}
	list, err := json.Marshal(p.Nodes)
	if err != nil {
		return interpretError(err)
	}
	return s.write(ctx, func(w *wtx) error {
		_, err := w.exec(qNodeForget, string(list), p.DeadBefore)
		return err
	})
}

// TaskHeldBy returns up to p.Limit RUNNING push tasks held by p.Nodes.
func (s *Store) TaskHeldBy(ctx context.Context, p *store.HeldByParams) ([]*task.Task, error) {
	if p.Limit <= 0 || len(p.Nodes) == 0 {
		return []*task.Task{}, nil
	}
	list, err := json.Marshal(p.Nodes)
	if err != nil {
		return nil, interpretError(err)
	}
	rows, err := s.reader(qHeldBy).QueryContext(ctx, string(list), p.Limit)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := scanTasks(rows, true)
	if out == nil && err == nil {
		out = []*task.Task{}
	}
	return out, err
}
