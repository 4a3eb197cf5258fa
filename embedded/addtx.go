package embedded

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/postgres"
	"github.com/errandhq/errand/internal/task"
)

// AddTx adds tasks as Add does, inside the program's own PostgreSQL
// transaction tx (River's InsertTx): the tasks exist if and only if tx
// commits, and are then delivered by any node or embedding program on the
// store, like any other. tx must be on the engine's database (and schema);
// the engine's store must be PostgreSQL, else the call is refused with
// INVALID_ARGUMENT. A refusal of the whole call leaves tx as it was; a
// duplicate name refuses only that task, as in Add.
func (e *Engine) AddTx(ctx context.Context, tx pgx.Tx, instance, queue string, tasks ...NewTask) ([]Added, error) {
	if err := e.refuse(); err != nil {
		return nil, err
	}
	pg, ok := e.st.(*postgres.Store)
	if !ok {
		return nil, publicError(task.Errorf(task.CodeInvalidArgument, "AddTx needs a postgres:// store; this engine's is not"))
	}
	if tx == nil {
		return nil, publicError(task.FieldErrorf(task.CodeInvalidArgument, "tx", "must not be nil"))
	}
	res, err := e.eng.TaskAddWith(ctx, engine.QueueRef{Org: e.org, Instance: instance, Queue: queue}, addInputs(tasks),
		func(ctx context.Context, _ *task.Queue, ts []*task.Task) ([]store.AddResult, error) {
			return pg.TaskAddTx(ctx, tx, ts)
		})
	if err != nil {
		return nil, e.fail(err)
	}
	return addedOf(res, tasks), nil
}
