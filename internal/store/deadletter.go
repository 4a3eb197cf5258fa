package store

import "github.com/errandhq/errand/internal/task"

// CheckDeadLetter refuses q's deadLetterQueue, INVALID_ARGUMENT naming it,
// when it is q itself or when exists says the instance has no such queue.
// exists is called only when q names another queue; a backend checks (and
// holds, where it can) that queue inside the transaction that stores q.
func CheckDeadLetter(q *task.Queue, exists func(name string) (bool, error)) error {
	if q.DeadLetterQueue == "" {
		return nil
	}
	if q.DeadLetterQueue == q.Name {
		return task.FieldErrorf(task.CodeInvalidArgument, "deadLetterQueue", "a queue cannot be its own dead-letter queue")
	}
	ok, err := exists(q.DeadLetterQueue)
	if err != nil {
		return err
	}
	if !ok {
		return task.FieldErrorf(task.CodeInvalidArgument, "deadLetterQueue", "queue %q does not exist in this instance", q.DeadLetterQueue)
	}
	return nil
}
