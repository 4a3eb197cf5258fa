package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/errandhq/errand/internal/task"
)

// copyMinBatch is the smallest batch TaskAdd sends with COPY (copyTasks):
// COPY costs PostgreSQL about a third less per row than an INSERT, but two
// round trips more (BEGIN with the queues' lock, then COPY, then COMMIT),
// which a small add, where latency matters, would not win back.
const copyMinBatch = 64

// sqlCopyQueues holds (key share) the queues of a COPY batch that exist, as
// qTaskInsert's q does, so that none is deleted before the COPY commits.
const sqlCopyQueues = `SELECT instance_id, name FROM queues
	WHERE (instance_id, name) IN (SELECT * FROM unnest($1::text[], $2::text[]))
	FOR KEY SHARE`

// copyColumns are the columns copyTasks writes, in taskRowSpec's order.
var copyColumns = func() []string {
	var names []string
	for _, s := range taskRowSpec {
		name, _, _ := strings.Cut(s, " ")
		names = append(names, name)
	}
	return names
}()

// copyTasks stores a batch of unnamed tasks, whose ids must differ, with
// COPY in one transaction, after locking their queues. It reports false,
// having written nothing, when a queue does not exist or an id is taken
// (the COPY fails as a whole): the caller then sends the batch with
// qTaskInsert, which answers for each task.
func copyTasks(ctx context.Context, pool *pgxpool.Pool, tasks []*task.Task) (bool, error) {
	rows := make([][]any, len(tasks))
	seen := make(map[[2]string]bool)
	var insts, queues []string
	for i, t := range tasks {
		target, err := targetJSON(t.Target)
		if err != nil {
			return false, err
		}
		attempts := attemptsJSON(t.Attempts)
		rows[i] = []any{
			t.InstanceID, t.ID, t.Queue, nil, string(t.State), t.Pull, int32(t.Attempt), int32(t.MaxAttempts),
			t.RunAt, t.CreatedAt, t.StartedAt, t.DeadlineAt, t.FinishedAt, t.LeaseID, t.LeaseExpiresAt,
			int32(t.DeadlineSeconds), t.Source, int32(t.Depth), int16(t.Priority), nullString(t.DeadLetterOf), t.LastError,
			nullString(target), attempts, nullBytes(t.Params), payloadBytes(t.Payload), nullBytes(t.Result),
		}
		if k := [2]string{t.InstanceID, t.Queue}; !seen[k] {
			seen[k] = true
			insts, queues = append(insts, t.InstanceID), append(queues, t.Queue)
		}
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return false, interpretError(err)
	}
	defer conn.Release()
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(sqlCopyQueues, insts, queues)
	n, err := countRows(conn.SendBatch(ctx, b))
	if err != nil {
		abort(ctx, conn)
		return false, err
	}
	if n != len(insts) { // a queue is missing
		abort(ctx, conn)
		return false, nil
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"tasks"}, copyColumns, pgx.CopyFromRows(rows)); err != nil {
		abort(ctx, conn)
		if isUniqueViolation(err) {
			return false, nil
		}
		return false, interpretError(err)
	}
	tag, err := conn.Exec(ctx, `COMMIT`)
	if err != nil {
		abort(ctx, conn)
		return false, interpretError(err)
	}
	if tag.String() != "COMMIT" {
		return false, task.Errorf(task.CodeUnavailable, "store: the add was rolled back (%s)", tag.String())
	}
	return true, nil
}

// countRows reads a batch of BEGIN and one query, and returns how many rows
// the query answered.
func countRows(br pgx.BatchResults) (int, error) {
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return 0, interpretError(err)
	}
	rows, err := br.Query()
	if err != nil {
		return 0, interpretError(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if err := rowsErr(rows); err != nil {
		return 0, err
	}
	return n, interpretError(br.Close())
}
