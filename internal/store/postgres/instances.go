package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

const instanceCols = `id, org, name, created_at, retention_days, rate_limit, max_in_flight, webhook_key`

var (
	// qInstanceCreate stores the instance and its default queue in one
	// statement: both or neither.
	qInstanceCreate = `WITH i AS (
		INSERT INTO instances (` + instanceCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id
	)
	INSERT INTO queues (` + queueCols + `)
	SELECT i.id, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23 FROM i`
	qInstanceByName = `SELECT ` + instanceCols + ` FROM instances WHERE org = $1 AND name = $2`
	qInstanceByID   = `SELECT ` + instanceCols + ` FROM instances WHERE id = $1`
	qInstanceList   = `SELECT ` + instanceCols + ` FROM instances WHERE org = $1 ORDER BY name`
	qInstanceLock   = qInstanceByName + ` FOR NO KEY UPDATE`
	qInstanceUpdate = `UPDATE instances SET retention_days = $1, rate_limit = $2, max_in_flight = $3, webhook_key = $4 WHERE id = $5`
	// The instance is locked first, then its queues are deleted (which
	// waits for adds in flight, as they hold a key-share lock on their
	// queue), and only then its tasks, in a later statement that sees
	// those adds.
	qInstanceDeleteLock   = `SELECT id FROM instances WHERE org = $1 AND name = $2 FOR UPDATE`
	qInstanceDeleteQueues = `DELETE FROM queues WHERE instance_id = $1`
	qInstanceDeleteTasks  = `DELETE FROM tasks WHERE instance_id = $1`
	qInstanceDeleteUsage  = `DELETE FROM usage_days WHERE instance_id = $1`
	qInstanceDelete       = `DELETE FROM instances WHERE id = $1`
)

func scanInstance(row store.Scanner) (*task.Instance, error) {
	i := &task.Instance{}
	if err := row.Scan(&i.ID, &i.Org, &i.Name, &i.CreatedAt, &i.Settings.RetentionDays, &i.Settings.RateLimit,
		&i.Settings.MaxInFlight, &i.WebhookKey); err != nil {
		return nil, interpretError(err)
	}
	return i, nil
}

// InstanceCreate stores a new instance and its default queue (push, no
// target) in one statement; INSTANCE_EXISTS if (org, name) is taken.
func (s *Store) InstanceCreate(ctx context.Context, inst *task.Instance) error {
	q := task.NewQueue(inst.ID, task.DefaultQueueName, task.ModePush)
	q.CreatedAt = inst.CreatedAt
	qargs, err := queueArgs(q)
	if err != nil {
		return err
	}
	args := append([]any{inst.ID, inst.Org, inst.Name, inst.CreatedAt, inst.Settings.RetentionDays,
		inst.Settings.RateLimit, inst.Settings.MaxInFlight, inst.WebhookKey}, qargs[1:]...)
	_, err = s.pool.Exec(ctx, qInstanceCreate, args...)
	return interpretError(err)
}

// InstanceGet finds an instance by (org, name).
func (s *Store) InstanceGet(ctx context.Context, ref store.InstanceRef) (*task.Instance, error) {
	org, name := ref.Org, ref.Name
	return scanInstance(s.pool.QueryRow(ctx, qInstanceByName, org, name))
}

// InstanceGetByID finds an instance by its ID.
func (s *Store) InstanceGetByID(ctx context.Context, id string) (*task.Instance, error) {
	return scanInstance(s.pool.QueryRow(ctx, qInstanceByID, id))
}

// InstanceList lists an organization's instances by name.
func (s *Store) InstanceList(ctx context.Context, org string) ([]*task.Instance, error) {
	rows, err := s.pool.Query(ctx, qInstanceList, org)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out, err := store.ScanAll(rows, scanInstance)
	return out, interpretError(err)
}

// InstanceUpdate locks the instance's row, applies fn and stores its
// settings and webhook key; its ID, org, name and creation time stay.
func (s *Store) InstanceUpdate(ctx context.Context, ref store.InstanceRef, fn func(*task.Instance) error) (*task.Instance, error) {
	org, name := ref.Org, ref.Name
	var out *task.Instance
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		inst, err := scanInstance(tx.QueryRow(ctx, qInstanceLock, org, name))
		if err != nil {
			return err
		}
		id, iorg, iname, created := inst.ID, inst.Org, inst.Name, inst.CreatedAt
		if err := fn(inst); err != nil {
			return err
		}
		inst.ID, inst.Org, inst.Name, inst.CreatedAt = id, iorg, iname, created
		if _, err := tx.Exec(ctx, qInstanceUpdate, inst.Settings.RetentionDays, inst.Settings.RateLimit,
			inst.Settings.MaxInFlight, inst.WebhookKey, inst.ID); err != nil {
			return interpretError(err)
		}
		out = inst
		return nil
	})
	return out, err
}

// InstanceDelete removes an instance with its queues, tasks and channel
// logs in one
// transaction, whose statements may run for up to bulkStatementTimeout.
func (s *Store) InstanceDelete(ctx context.Context, ref store.InstanceRef) error {
	org, name := ref.Org, ref.Name
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var id string
		if err := tx.QueryRow(ctx, qInstanceDeleteLock, org, name).Scan(&id); err != nil {
			return interpretError(err)
		}
		if err := bulk(ctx, tx); err != nil {
			return err
		}
		b := &pgx.Batch{}
		for _, q := range []string{qInstanceDeleteQueues, qInstanceDeleteTasks, qInstanceDeleteUsage, qInstanceDeleteChannelMessages, qInstanceDeleteChannelHeads, qInstanceDelete} {
			b.Queue(q, id)
		}
		return interpretError(tx.SendBatch(ctx, b).Close())
	})
}
