package mcp

// queueArg names one queue; tools embed it.
type queueArg struct {
	Instance string `json:"instance" jsonschema:"The tasks instance: a named namespace of queues, e.g. \"jobs\". errand dev creates one on first use of its name."`
	Queue    string `json:"queue" jsonschema:"The queue's name in the instance: 1–100 letters, digits, '-' or '_'. Every instance has a queue named \"default\" (push, no target of its own)."`
}

// taskArg names one task; tools embed it.
type taskArg struct {
	Instance string `json:"instance" jsonschema:"The tasks instance the task belongs to, e.g. \"jobs\"."`
	ID       string `json:"id" jsonschema:"The task's id, as tasks_add, tasks_list or tasks_lease returned it."`
}

// getTaskIn is tasks_get's input: the task, and how long to wait for it
// to end.
type getTaskIn struct {
	taskArg
	WaitSeconds int `json:"waitSeconds,omitempty" jsonschema:"Wait up to this many seconds (0–30) for the task to end before answering; 0 or absent answers at once."`
}

// setPriorityIn is tasks_set_priority's input: the task and its new
// priority.
type setPriorityIn struct {
	taskArg
	Priority int `json:"priority" jsonschema:"The task's new priority, 0–9 (higher goes first; 0 is the default)."`
}

// rescheduleIn is tasks_reschedule's input: the task and its new due
// time.
type rescheduleIn struct {
	taskArg
	Delay *float64 `json:"delay,omitempty" jsonschema:"Seconds from now the task is due (0–31536000, fractions allowed); send delay or runAt."`
	RunAt *int64   `json:"runAt,omitempty" jsonschema:"When the task is due, epoch milliseconds (a time in the past means now; at most a year ahead); send delay or runAt."`
}

// instanceArg names one instance; tools embed it.
type instanceArg struct {
	Instance string `json:"instance" jsonschema:"The tasks instance, e.g. \"jobs\"."`
}

// leaseArg names a leased task and its lease; the pull tools embed it.
type leaseArg struct {
	taskArg
	LeaseID string `json:"leaseId" jsonschema:"The leaseId tasks_lease returned with this task. Once the lease is over (expired, released, or acked) calls with it answer LEASE_LOST, but an ack repeated with the lease that acked the task answers success again (safe to retry)."`
}
