package task

import "strings"

// A purge removes a queue's tasks at once, but for those whose attempt is
// in flight: each of those stays RUNNING, holding its slot under the
// queue's maxConcurrent and its name, until its attempt ends. Its lease
// becomes PurgedLease of the attempt's lease, so that every fenced write
// of the attempt (its outcome, a pull worker's ack or extend) misses;
// the store then removes the task instead, and the rescuer removes it if
// the attempt never answers.

// PurgedLeaseSuffix ends the lease of a task purged during its attempt.
const PurgedLeaseSuffix = "/purged"

// PurgedLease is the lease of a task purged while leaseID held its attempt.
func PurgedLease(leaseID string) string { return leaseID + PurgedLeaseSuffix }

// IsPurgedLease reports whether leaseID is a purged attempt's (PurgedLease).
func IsPurgedLease(leaseID string) bool { return strings.HasSuffix(leaseID, PurgedLeaseSuffix) }

// ErrPurged answers the attempt of a task purged while it ran: its answer
// is dropped and the task removed.
var ErrPurged = &Error{Code: CodeLeaseLost,
	Message: "the task was purged from its queue during this attempt: the answer is dropped and the task removed"}

// PurgedDuring reports whether t was purged during the attempt leaseID
// held, which still runs.
func (t *Task) PurgedDuring(leaseID string) bool {
	return t.State == Running && leaseID != "" && t.LeaseID == PurgedLease(leaseID)
}
