package deliver

import (
	"strconv"

	"github.com/errandhq/errand/internal/task"
)

// attemptFrame is the attempt frame of t for a worker's function (its name
// within the group) with the attempt's delivery token: the bytes
// errandapi.WorkerFrame's MarshalJSON gives for {type: attempt, leaseId,
// function, deadlineAt, priority, token, body: Body(t)}, encoded by hand. The body is
// appended in place, not copied and scanned again, so its payload and
// params reach the worker byte for byte as they were added, as a webhook
// receives them (json.Marshal would compact them and escape <, > and &).
func attemptFrame(t *task.Task, function, token string) []byte {
	b := make([]byte, 0, 96+len(t.LeaseID)+len(function)+len(token)+bodySize(t))
	b = append(b, `{"type":"attempt"`...)
	if t.LeaseID != "" {
		b = append(b, `,"leaseId":`...)
		b = appendString(b, t.LeaseID)
	}
	if function != "" {
		b = append(b, `,"function":`...)
		b = appendString(b, function)
	}
	if t.DeadlineAt != 0 {
		b = append(b, `,"deadlineAt":`...)
		b = strconv.AppendInt(b, t.DeadlineAt, 10)
	}
	if t.Priority != 0 {
		b = append(b, `,"priority":`...)
		b = strconv.AppendInt(b, int64(t.Priority), 10)
	}
	if token != "" {
		b = append(b, `,"token":`...)
		b = appendString(b, token)
	}
	b = append(b, `,"body":`...)
	b = appendBody(b, t)
	return append(b, '}')
}
