package errandapi

// Mode is a queue's mode, fixed at creation.
type Mode string

// The two modes.
const (
	ModePush Mode = "push"
	ModePull Mode = "pull"
)

// Queue is a queue in v1 JSON with its settings. Counts (by state, each
// stopping at 10,000; Capped lists those that did) come with list and get,
// not with create and patch.
type Queue struct {
	Name              string        `json:"name"`
	Mode              Mode          `json:"mode"`
	Target            *Target       `json:"target"`
	RatePerSecond     *float64      `json:"ratePerSecond"`
	MaxConcurrent     *int          `json:"maxConcurrent"`
	MaxAttempts       int           `json:"maxAttempts"`
	MinBackoffSeconds float64       `json:"minBackoffSeconds"`
	MaxBackoffSeconds float64       `json:"maxBackoffSeconds"`
	MaxDoublings      int           `json:"maxDoublings"`
	MaxAgeSeconds     *int64        `json:"maxAgeSeconds"`
	DeadlineSeconds   int           `json:"deadlineSeconds"`
	DeadLetterQueue   *string       `json:"deadLetterQueue"`
	TargetControl     bool          `json:"targetControl"`
	Paused            bool          `json:"paused"`
	CreatedAt         int64         `json:"createdAt"`
	Counts            map[State]int `json:"counts,omitempty"`
	Capped            []State       `json:"capped"`
}

// QueueRequest is the body of a queue create (Name required) or PATCH
// (only the settings sent change; Null clears a nullable one).
type QueueRequest struct {
	Name              *string           `json:"name,omitempty"`
	Mode              *Mode             `json:"mode,omitempty"`
	Target            Nullable[Target]  `json:"target,omitzero"`
	RatePerSecond     Nullable[float64] `json:"ratePerSecond,omitzero"`
	MaxConcurrent     Nullable[int]     `json:"maxConcurrent,omitzero"`
	MaxAttempts       *int              `json:"maxAttempts,omitempty"`
	MinBackoffSeconds *float64          `json:"minBackoffSeconds,omitempty"`
	MaxBackoffSeconds *float64          `json:"maxBackoffSeconds,omitempty"`
	MaxDoublings      *int              `json:"maxDoublings,omitempty"`
	MaxAgeSeconds     Nullable[int64]   `json:"maxAgeSeconds,omitzero"`
	DeadlineSeconds   *int              `json:"deadlineSeconds,omitempty"`
	DeadLetterQueue   Nullable[string]  `json:"deadLetterQueue,omitzero"`
	TargetControl     *bool             `json:"targetControl,omitempty"`
	Paused            *bool             `json:"paused,omitempty"`
}

// QueueResponse is the answer of a queue create, get or patch.
type QueueResponse struct {
	Queue *Queue `json:"queue"`
}

// QueueList is the answer of listing an instance's queues.
type QueueList struct {
	Queues []Queue `json:"queues"`
}

// DeleteResponse is the answer of a queue delete or purge: the tasks
// removed; Pending is always false (the work is done when it answers).
type DeleteResponse struct {
	Deleted int  `json:"deleted"`
	Pending bool `json:"pending"`
}

// QueueActivity is the answer of GET
// /v1/tasks/{instance}/queues/{queue}/activity: the queue's tasks added,
// succeeded and failed per minute over the last hour, oldest minute
// first, the current minute last.
type QueueActivity struct {
	Minutes []ActivityMinute `json:"minutes"`
	// Capped names the kinds ("added", "succeeded", "failed") whose counts
	// stopped at the read's bound (100,000 tasks an hour): they are a lower
	// bound.
	Capped []string `json:"capped"`
}

// ActivityMinute is one minute of a queue's activity; At is its start
// (epoch ms). A failure is a task that ended failed, not a retried attempt.
type ActivityMinute struct {
	At        int64 `json:"at"`
	Added     int   `json:"added"`
	Succeeded int   `json:"succeeded"`
	Failed    int   `json:"failed"`
}
