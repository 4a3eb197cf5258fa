package store

import (
	"strings"

	"github.com/errandhq/errand/internal/task"
)

// CheckDeadLetter refuses q's deadLetterQueue, INVALID_ARGUMENT naming it,
// when it is q itself, when the instance has no such queue, or when
// following each queue's deadLetterQueue from it leads back to q (a task
// failing in each would go round for ever). next reports a queue's own
// deadLetterQueue ("" for none) and whether the queue exists; it is
// called only when q names another queue, and a backend answers it inside
// the transaction that stores q (holding the first queue, where it can).
// A chain that ends, names a missing queue, or loops without passing
// through q is no concern of q's: the engine's depth bound ends any loop
// that concurrent changes could still make (task.Task.DeadLetter).
func CheckDeadLetter(q *task.Queue, next func(name string) (dlq string, exists bool, err error)) error {
	if q.DeadLetterQueue == "" {
		return nil
	}
	if q.DeadLetterQueue == q.Name {
		return task.FieldErrorf(task.CodeInvalidArgument, "deadLetterQueue", "a queue cannot be its own dead-letter queue")
	}
	path := []string{q.Name, q.DeadLetterQueue}
	seen := map[string]bool{q.Name: true}
	for cur := q.DeadLetterQueue; ; {
		seen[cur] = true
		dlq, ok, err := next(cur)
		switch {
		case err != nil:
			return err
		case !ok && cur == q.DeadLetterQueue:
			return task.FieldErrorf(task.CodeInvalidArgument, "deadLetterQueue", "queue %q does not exist in this instance", q.DeadLetterQueue)
		case !ok || dlq == "" || (seen[dlq] && dlq != q.Name):
			return nil
		}
		path = append(path, dlq)
		if dlq == q.Name {
			return task.FieldErrorf(task.CodeInvalidArgument, "deadLetterQueue",
				"queue %q leads back here (%s): a task that kept failing would go from dead-letter queue to dead-letter queue for ever", q.DeadLetterQueue, strings.Join(path, " → "))
		}
		cur = dlq
	}
}
