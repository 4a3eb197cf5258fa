package sqlite

import (
	"context"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

const instanceCols = `id, org, name, created_at, retention_days, rate_limit, max_in_flight, webhook_key`

var (
	qInstanceInsert = define(onWriter, `INSERT INTO instances (`+instanceCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
	qInstanceByName = define(onWriter|onReader, `SELECT `+instanceCols+` FROM instances WHERE org = ? AND name = ?`)
	qInstanceByID   = define(onReader, `SELECT `+instanceCols+` FROM instances WHERE id = ?`)
	qInstanceExists = define(onWriter, `SELECT 1 FROM instances WHERE id = ?`)
	qInstanceList   = define(onReader, `SELECT `+instanceCols+` FROM instances WHERE org = ? ORDER BY name`)
	qInstanceUpdate = define(onWriter, `UPDATE instances SET retention_days = ?, rate_limit = ?, max_in_flight = ?, webhook_key = ? WHERE id = ?`)
	qInstanceDelete = define(onWriter, `DELETE FROM instances WHERE id = ?`)
	qInstanceTasks  = define(onWriter, `DELETE FROM tasks WHERE instance_id = ?`)
	qInstanceQueues = define(onWriter, `DELETE FROM queues WHERE instance_id = ?`)
	qInstanceUsage  = define(onWriter, `DELETE FROM usage_days WHERE instance_id = ?`)
	qInstanceRate   = define(onWriter, `DELETE FROM api_rate WHERE instance_id = ?`)
)

func scanInstance(sc scanner) (*task.Instance, error) {
	i := &task.Instance{}
	if err := sc.Scan(&i.ID, &i.Org, &i.Name, &i.CreatedAt, &i.Settings.RetentionDays, &i.Settings.RateLimit,
		&i.Settings.MaxInFlight, &i.WebhookKey); err != nil {
		return nil, interpretError(err)
	}
	return i, nil
}

// InstanceCreate stores a new instance and its default queue (push, no
// target) in one transaction; INSTANCE_EXISTS if (org, name) is taken.
func (s *Store) InstanceCreate(ctx context.Context, inst *task.Instance) error {
	return s.write(ctx, func(w *wtx) error {
		if _, err := w.exec(qInstanceInsert, inst.ID, inst.Org, inst.Name, inst.CreatedAt, inst.Settings.RetentionDays,
			inst.Settings.RateLimit, inst.Settings.MaxInFlight, inst.WebhookKey); err != nil {
			return err
		}
		q := task.NewQueue(inst.ID, task.DefaultQueueName, task.ModePush)
		q.CreatedAt = inst.CreatedAt
		return w.insertQueue(q)
	})
}

// InstanceGet finds an instance by (org, name).
func (s *Store) InstanceGet(ctx context.Context, ref store.InstanceRef) (*task.Instance, error) {
	org, name := ref.Org, ref.Name
	return scanInstance(s.reader(qInstanceByName).QueryRowContext(ctx, org, name))
}

// InstanceGetByID finds an instance by its ID.
func (s *Store) InstanceGetByID(ctx context.Context, id string) (*task.Instance, error) {
	return scanInstance(s.reader(qInstanceByID).QueryRowContext(ctx, id))
}

// InstanceList lists an organization's instances by name.
func (s *Store) InstanceList(ctx context.Context, org string) ([]*task.Instance, error) {
	rows, err := s.reader(qInstanceList).QueryContext(ctx, org)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out, err := store.ScanAll(rows, scanInstance)
	return out, interpretError(err)
}

// InstanceUpdate applies fn to the instance inside a write transaction and
// stores its settings and webhook key; its ID, org and name stay.
func (s *Store) InstanceUpdate(ctx context.Context, ref store.InstanceRef, fn func(*task.Instance) error) (*task.Instance, error) {
	org, name := ref.Org, ref.Name
	var out *task.Instance
	err := s.write(ctx, func(w *wtx) error {
		inst, err := scanInstance(w.queryRow(qInstanceByName, org, name))
		if err != nil {
			return err
		}
		id, iorg, iname, created := inst.ID, inst.Org, inst.Name, inst.CreatedAt
		if err := fn(inst); err != nil {
			return err
		}
		inst.ID, inst.Org, inst.Name, inst.CreatedAt = id, iorg, iname, created
		if _, err := w.exec(qInstanceUpdate, inst.Settings.RetentionDays, inst.Settings.RateLimit,
			inst.Settings.MaxInFlight, inst.WebhookKey, inst.ID); err != nil {
			return err
		}
		out = inst
		return nil
	})
	return out, err
}

// InstanceDelete removes an instance with its queues, tasks and channel
// logs in one
// transaction.
func (s *Store) InstanceDelete(ctx context.Context, ref store.InstanceRef) error {
	org, name := ref.Org, ref.Name
	return s.write(ctx, func(w *wtx) error {
		inst, err := scanInstance(w.queryRow(qInstanceByName, org, name))
		if err != nil {
			return err
		}
		for _, q := range []query{qInstanceTasks, qInstanceQueues, qInstanceUsage, qInstanceRate, qInstanceDelete} {
			if _, err := w.exec(q, inst.ID); err != nil {
				return err
			}
		}
		return w.deleteInstanceChannels(inst.ID)
	})
}
