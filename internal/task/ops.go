package task

import (
	"encoding/json"
	"time"

	"github.com/errandhq/errand/errandapi"
)

// The operations API's jobs (dead-letter replay and purge, exports, backups)
// are tasks of this same lifecycle. They live in a reserved instance of each
// organization, OpsInstance, one queue per kind named after the kind. The v1
// API refuses both names (an instance name may not start with '_', a queue
// name may not hold '.'), so no v1 call can create, list or reach them.
const OpsInstance = "_ops"

// OpsFilesInstance is the reserved instance that holds what a job produces
// beyond its 64 KiB result: the parts of a backup.export bundle, as
// finished tasks of its pull queue OpsFilesQueue, kept as long as jobs.
const (
	OpsFilesInstance = "_ops-files"
	OpsFilesQueue    = "bundle.parts"
)

// IsReservedInstance reports whether name is one of errand's own instances
// (it starts with '_', which no v1 name may): never listed, found or deleted
// through the instance calls.
func IsReservedInstance(name string) bool {
	return len(name) > 0 && name[0] == '_'
}

// The closed set of operations kinds.
const (
	KindDLQReplay      = errandapi.KindDLQReplay
	KindDLQPurge       = errandapi.KindDLQPurge
	KindBackupExport   = errandapi.KindBackupExport
	KindInstanceBackup = errandapi.KindInstanceBackup
)

// OpsKinds lists the kinds, in the order the documentation gives them.
var OpsKinds = []string{KindDLQReplay, KindDLQPurge, KindBackupExport, KindInstanceBackup}

// Attempt budget and backoff of operations tasks (docs/ops.md).
const (
	OpsDefaultAttempts = 3
	OpsMaxAttempts     = 8
	// OpsRetentionDays is how long a finished operations task is kept by
	// default.
	OpsRetentionDays = 30
	// MaxIdempotencyKey is the longest idempotency_key accepted, in bytes.
	MaxIdempotencyKey = 200
)

// OpsBackoff is the operations tasks' retry policy: 5 s, 20 s, 80 s, 320 s…
// (factor 4), never above 5 minutes.
var OpsBackoff = BackoffPolicy{Min: 5 * time.Second, Max: 5 * time.Minute, Doublings: 64, Factor: 4}

// IsOpsKind reports whether kind is one of the closed set.
func IsOpsKind(kind string) bool {
	for _, k := range OpsKinds {
		if k == kind {
			return true
		}
	}
	return false
}

// IsOpsQueue reports whether q is an operations queue: one named after an
// operations kind, a name the v1 API never accepts. Such a queue keeps each
// task's own attempt budget (set at submission, clamped to OpsMaxAttempts)
// instead of the queue's, and retries with OpsBackoff.
func (q *Queue) IsOpsQueue() bool { return IsOpsKind(q.Name) }

// budget is the attempt budget of t under q.
func (q *Queue) budget(t *Task) int {
	if q.IsOpsQueue() && t.MaxAttempts > 0 {
		return t.MaxAttempts
	}
	return q.MaxAttempts
}

// ClampAttempts returns the budget of an operations task from the requested
// value: nil or 0 takes the default, and anything above OpsMaxAttempts is
// clamped (not refused, so an exaggerated value cannot loop unbounded).
func ClampAttempts(requested *int64) int {
	switch {
	case requested == nil || *requested == 0:
		return OpsDefaultAttempts
	case *requested < 1:
		return 1
	case *requested > OpsMaxAttempts:
		return OpsMaxAttempts
	}
	return int(*requested)
}

// Checkpoint stores a running task's progress in its result while the
// attempt that holds leaseID is in flight (a resumed attempt reads it back).
// The success of the attempt replaces it with the final result.
func (t *Task) Checkpoint(leaseID string, now int64, progress json.RawMessage) error {
	if err := t.CheckLease(leaseID, now); err != nil {
		return err
	}
	if err := ValidateJSONBytes(progress, "result"); err != nil {
		return err
	}
	t.Result = progress
	return nil
}
