package sqlite

import (
	"context"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// qSnapshotTasks reads the next page of an instance's tasks after an id,
// along the primary key.
var qSnapshotTasks = define(onReader, `SELECT `+cols("", taskCols)+` FROM tasks
	WHERE instance_id = ? AND id > ? ORDER BY id LIMIT ?`)

// InstanceSnapshot implements store.OpsStore: its reads share one read
// transaction on a connection of the read pool, which in WAL mode sees the
// database as of its first read. Meanwhile checkpoints cannot copy back
// the frames committed after that read, and the WAL grows until it ends.
func (s *Store) InstanceSnapshot(ctx context.Context, p *store.SnapshotParams) error {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return interpretError(err)
	}
	defer func() { _ = tx.Rollback() }()
	inst, err := scanInstance(tx.StmtContext(ctx, s.reader(qInstanceByName)).QueryRowContext(ctx, p.Ref.Org, p.Ref.Name))
	if err != nil {
		return err
	}
	rows, err := tx.StmtContext(ctx, s.reader(qQueueList)).QueryContext(ctx, inst.ID)
	if err != nil {
		return interpretError(err)
	}
	qs, err := scanQueues(rows)
	if err != nil {
		return err
	}
	rules, err := queryTriggers(ctx, tx.StmtContext(ctx, s.reader(qTriggerList)), inst.ID)
	if err != nil {
		return err
	}
	events, err := queryEvents(ctx, tx.StmtContext(ctx, s.reader(qEventsOf)), inst.ID)
	if err != nil {
		return err
	}
	if err := p.Head(&store.SnapshotHead{Instance: inst, Queues: qs, Rules: rules, Events: events}); err != nil {
		return err
	}
	page := tx.StmtContext(ctx, s.reader(qSnapshotTasks))
	return store.SnapshotTasks(func(after string) ([]*task.Task, error) {
		rows, err := page.QueryContext(ctx, inst.ID, after, store.SnapshotPage)
		if err != nil {
			return nil, interpretError(err)
		}
		return scanTasks(rows, true)
	}, p.Task)
}
