package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// sqlSnapshotTasks reads the next page of an instance's tasks after id $2,
// along tasks_pkey.
var sqlSnapshotTasks = `SELECT ` + cols("", taskCols) + ` FROM tasks
	WHERE instance_id = $1 AND id > $2 ORDER BY id LIMIT $3`

// InstanceSnapshot implements store.OpsStore: its reads share one
// REPEATABLE READ, READ ONLY transaction, and so one snapshot. A long
// snapshot holds back the removal of the row versions it could still see,
// in every table of the database, as pg_dump's does.
func (s *Store) InstanceSnapshot(ctx context.Context, p *store.SnapshotParams) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return interpretError(err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		_ = tx.Rollback(rctx)
		cancel()
	}()
	// Between pages the transaction waits while the caller writes what it
	// read (the archive to disk): a slow disk must not end it half-way.
	if _, err := tx.Exec(ctx, `SET LOCAL idle_in_transaction_session_timeout = '`+bulkStatementTimeout+`'`); err != nil {
		return interpretError(err)
	}
	inst, err := scanInstance(tx.QueryRow(ctx, qInstanceByName, p.Ref.Org, p.Ref.Name))
	if err != nil {
		return err
	}
	qs, err := scanQueues(tx.Query(ctx, qQueueList, inst.ID))
	if err != nil {
		return err
	}
	rules, err := queryTriggers(ctx, tx, qTriggerList, inst.ID)
	if err != nil {
		return err
	}
	events, err := queryEvents(ctx, tx, qEventsOf, inst.ID)
	if err != nil {
		return err
	}
	if err := p.Head(&store.SnapshotHead{Instance: inst, Queues: qs, Rules: rules, Events: events}); err != nil {
		return err
	}
	return store.SnapshotTasks(func(after string) ([]*task.Task, error) {
		rows, err := tx.Query(ctx, sqlSnapshotTasks, inst.ID, after, store.SnapshotPage)
		if err != nil {
			return nil, interpretError(err)
		}
		return scanTasks(rows, true)
	}, p.Task)
}
