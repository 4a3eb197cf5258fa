package task

import (
	"time"

	"github.com/errandhq/errand/errandapi"
)

// Mode is a queue's delivery mode.
type Mode string

// The two modes.
const (
	ModePush Mode = "push"
	ModePull Mode = "pull"
)

// Queue defaults and bounds (docs/api.md, "Queues").
const (
	DefaultQueueName         = "default"
	DefaultMaxAttempts       = 10
	DefaultMinBackoffSeconds = 10.0
	DefaultMaxBackoffSeconds = 3600.0
	DefaultMaxDoublings      = 16
	DefaultDeadlineSeconds   = 600
	MaxDeadlineSeconds       = 840
	MaxQueueAttempts         = 1000
	// MaxPriority is the highest task priority (the API's): a queue's due
	// tasks are claimed from the highest priority down, each priority in
	// runAt order.
	MaxPriority = errandapi.MaxPriority
)

// Bounds of the numeric queue settings (docs/api.md lists them).
const (
	MinRatePerSecond = 0.001
	MaxRatePerSecond = 1e6
	MaxMaxConcurrent = 100000
	MaxBackoffBound  = 86400 // min and max backoff, seconds
	MaxMaxDoublings  = 64
	MaxMaxAgeSeconds = 315360000 // ten years
)

// Queue is a named queue of an instance with its settings.
type Queue struct {
	InstanceID string
	Name       string
	Mode       Mode
	Target     *Target // default target; nil for none
	// RatePerSecond is the most deliveries started per second; 0 = unlimited.
	RatePerSecond float64
	// MaxConcurrent is the most deliveries in flight; 0 = unlimited.
	MaxConcurrent     int
	MaxAttempts       int
	MinBackoffSeconds float64
	MaxBackoffSeconds float64
	MaxDoublings      int
	// MaxAgeSeconds ends a task that long after it was created; 0 = none.
	MaxAgeSeconds   int64
	DeadlineSeconds int
	DeadLetterQueue string // "" = none
	TargetControl   bool
	Paused          bool
	CreatedAt       int64
}

// NewQueue returns a queue with every default applied.
func NewQueue(instanceID, name string, mode Mode) *Queue {
	return &Queue{
		InstanceID:        instanceID,
		Name:              name,
		Mode:              mode,
		MaxAttempts:       DefaultMaxAttempts,
		MinBackoffSeconds: DefaultMinBackoffSeconds,
		MaxBackoffSeconds: DefaultMaxBackoffSeconds,
		MaxDoublings:      DefaultMaxDoublings,
		DeadlineSeconds:   DefaultDeadlineSeconds,
		TargetControl:     true,
	}
}

// DeliversUntargeted reports whether q can deliver a task that carries no
// target of its own (a rule's task, a dead-letter copy, an add without
// one): a pull queue, or a push queue with a target.
func (q *Queue) DeliversUntargeted() bool { return q.Mode != ModePush || q.Target != nil }

// DeadLetterRefusal refuses queue name, which cannot take dead letters
// (DeliversUntargeted), as the deadLetterQueue that field sets.
func DeadLetterRefusal(field, name string) error {
	return FieldErrorf(CodeNoTarget, field,
		"queue %q is a push queue without a target, and a dead-letter copy carries none: give it a target, or use a pull queue", name)
}

// Backoff returns the queue's retry policy.
func (q *Queue) Backoff() BackoffPolicy {
	if q.IsOpsQueue() {
		return OpsBackoff
	}
	return BackoffPolicy{
		Min:       time.Duration(q.MinBackoffSeconds * float64(time.Second)),
		Max:       time.Duration(q.MaxBackoffSeconds * float64(time.Second)),
		Doublings: q.MaxDoublings,
		Factor:    2,
	}
}

// QueuePatch holds the settings a create or PATCH sends; nil fields are left
// as they are. Target uses a double pointer so that `"target": null` clears it.
type QueuePatch struct {
	Mode              *Mode
	Target            **Target
	RatePerSecond     **float64
	MaxConcurrent     **int
	MaxAttempts       *int
	MinBackoffSeconds *float64
	MaxBackoffSeconds *float64
	MaxDoublings      *int
	MaxAgeSeconds     **int64
	DeadlineSeconds   *int
	DeadLetterQueue   **string
	TargetControl     *bool
	Paused            *bool
}

// Apply validates p and applies it to q. create allows Mode to be set; a PATCH
// may not change the mode of an existing queue. dev allows http and local
// webhooks.
func (p *QueuePatch) Apply(q *Queue, create bool, rules URLRules) error {
	if p.Mode != nil {
		if *p.Mode != ModePush && *p.Mode != ModePull {
			return FieldErrorf(CodeInvalidArgument, "mode", "must be push or pull")
		}
		if !create && *p.Mode != q.Mode {
			return FieldErrorf(CodeInvalidArgument, "mode", "a queue's mode cannot change")
		}
		q.Mode = *p.Mode
	}
	if p.Target != nil {
		if *p.Target != nil {
			if err := ValidateTarget(*p.Target, q.Target, "target", rules); err != nil {
				return err
			}
		}
		q.Target = *p.Target
	}
	if p.RatePerSecond != nil {
		v := 0.0
		if *p.RatePerSecond != nil {
			v = **p.RatePerSecond
			if !(v >= MinRatePerSecond) || v > MaxRatePerSecond {
				return FieldErrorf(CodeInvalidArgument, "ratePerSecond", "must be 0.001–1000000, or null for unlimited")
			}
		}
		q.RatePerSecond = v
	}
	if p.MaxConcurrent != nil {
		v := 0
		if *p.MaxConcurrent != nil {
			v = **p.MaxConcurrent
			if v < 1 || v > MaxMaxConcurrent {
				return FieldErrorf(CodeInvalidArgument, "maxConcurrent", "must be 1–%d, or null for unlimited", MaxMaxConcurrent)
			}
		}
		q.MaxConcurrent = v
	}
	if p.MaxAttempts != nil {
		if *p.MaxAttempts < 1 || *p.MaxAttempts > MaxQueueAttempts {
			return FieldErrorf(CodeInvalidArgument, "maxAttempts", "must be 1–%d", MaxQueueAttempts)
		}
		q.MaxAttempts = *p.MaxAttempts
	}
	if p.MinBackoffSeconds != nil {
		if !(*p.MinBackoffSeconds >= 0.001) || *p.MinBackoffSeconds > MaxBackoffBound {
			return FieldErrorf(CodeInvalidArgument, "minBackoffSeconds", "must be 0.001–86400")
		}
		q.MinBackoffSeconds = *p.MinBackoffSeconds
	}
	if p.MaxBackoffSeconds != nil {
		if !(*p.MaxBackoffSeconds >= 0.001) || *p.MaxBackoffSeconds > MaxBackoffBound {
			return FieldErrorf(CodeInvalidArgument, "maxBackoffSeconds", "must be 0.001–86400")
		}
		q.MaxBackoffSeconds = *p.MaxBackoffSeconds
	}
	if q.MaxBackoffSeconds < q.MinBackoffSeconds {
		if p.MaxBackoffSeconds == nil {
			return FieldErrorf(CodeInvalidArgument, "minBackoffSeconds", "must not be above maxBackoffSeconds (%g)", q.MaxBackoffSeconds)
		}
		return FieldErrorf(CodeInvalidArgument, "maxBackoffSeconds", "must not be below minBackoffSeconds (%g)", q.MinBackoffSeconds)
	}
	if p.MaxDoublings != nil {
		if *p.MaxDoublings < 0 || *p.MaxDoublings > MaxMaxDoublings {
			return FieldErrorf(CodeInvalidArgument, "maxDoublings", "must be 0–%d", MaxMaxDoublings)
		}
		q.MaxDoublings = *p.MaxDoublings
	}
	if p.MaxAgeSeconds != nil {
		var v int64
		if *p.MaxAgeSeconds != nil {
			v = **p.MaxAgeSeconds
			if v < 1 || v > MaxMaxAgeSeconds {
				return FieldErrorf(CodeInvalidArgument, "maxAgeSeconds", "must be 1–%d (ten years), or null for none", MaxMaxAgeSeconds)
			}
		}
		q.MaxAgeSeconds = v
	}
	if p.DeadlineSeconds != nil {
		if *p.DeadlineSeconds < 1 || *p.DeadlineSeconds > MaxDeadlineSeconds {
			return FieldErrorf(CodeInvalidArgument, "deadlineSeconds", "must be 1–%d", MaxDeadlineSeconds)
		}
		q.DeadlineSeconds = *p.DeadlineSeconds
	}
	if p.DeadLetterQueue != nil {
		v := ""
		if *p.DeadLetterQueue != nil {
			v = **p.DeadLetterQueue
			if err := ValidateQueueName(v, "deadLetterQueue"); err != nil {
				return err
			}
			if v == q.Name {
				return FieldErrorf(CodeInvalidArgument, "deadLetterQueue", "a queue cannot be its own dead-letter queue")
			}
		}
		q.DeadLetterQueue = v
	}
	if p.TargetControl != nil {
		q.TargetControl = *p.TargetControl
	}
	if p.Paused != nil {
		q.Paused = *p.Paused
	}
	if q.Mode == ModePull && q.Target != nil {
		return FieldErrorf(CodeInvalidArgument, "target", "a pull queue has no target")
	}
	return nil
}
