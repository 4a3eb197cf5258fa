package main

import (
	"strconv"

	"github.com/spf13/cobra"

	"github.com/errandhq/errand/errandapi"
)

// queueFlags are the settings of queues create and update. The nullable
// ones are strings so that update can clear them with "none"; every value
// is checked by the node, which names the field it refuses.
type queueFlags struct {
	mode, webhook, function, rate, maxConcurrent, maxAge, deadLetter string
	maxAttempts, maxDoublings, deadline                              int
	minBackoff, maxBackoff                                           float64
	paused, targetControl                                            bool
}

func addQueueFlags(c *cobra.Command, update bool) *queueFlags {
	q := &queueFlags{}
	fs := c.Flags()
	if !update {
		fs.StringVar(&q.mode, "mode", "", "push (default) or pull; fixed once the queue exists")
	}
	clear := ""
	if update {
		clear = `; "none" clears it`
	}
	fs.StringVar(&q.webhook, "webhook", "", "target: the https URL each task is POSTed to"+clear)
	fs.StringVar(&q.function, "function", "", "target: an in-process function of an embedded errand"+clear)
	fs.StringVar(&q.rate, "rate", "", "ratePerSecond: deliveries started per second at most"+clear)
	fs.StringVar(&q.maxConcurrent, "max-concurrent", "", "maxConcurrent: deliveries in flight at most"+clear)
	fs.StringVar(&q.maxAge, "max-age", "", "maxAgeSeconds: a task older than this is not retried"+clear)
	fs.StringVar(&q.deadLetter, "dead-letter-queue", "", "deadLetterQueue: where a failed task's copy goes"+clear)
	fs.IntVar(&q.maxAttempts, "max-attempts", 0, "maxAttempts: attempts of a task, the first included")
	fs.IntVar(&q.maxDoublings, "max-doublings", 0, "maxDoublings: how many times the backoff doubles")
	fs.IntVar(&q.deadline, "deadline", 0, "deadlineSeconds: how long one attempt may take")
	fs.Float64Var(&q.minBackoff, "min-backoff", 0, "minBackoffSeconds: the first wait before a retry")
	fs.Float64Var(&q.maxBackoff, "max-backoff", 0, "maxBackoffSeconds: the longest wait before a retry")
	fs.BoolVar(&q.paused, "paused", false, "paused: no delivery or lease while set")
	fs.BoolVar(&q.targetControl, "target-control", false, "targetControl: the target's answer may delay the retry")
	return q
}

// request is the body of the create or PATCH: only the flags given.
func (q *queueFlags) request(c *cobra.Command) (errandapi.QueueRequest, error) {
	var r errandapi.QueueRequest
	set := c.Flags().Changed
	var err error
	if set("mode") {
		m := errandapi.Mode(q.mode)
		r.Mode = &m
	}
	if set("webhook") && set("function") {
		return r, usageErrorf("--webhook and --function are exclusive: a queue has one target")
	}
	if set("webhook") {
		r.Target = nullable(q.webhook, func(s string) (errandapi.Target, error) { return errandapi.Target{Webhook: s}, nil }, &err, "webhook")
	}
	if set("function") {
		r.Target = nullable(q.function, func(s string) (errandapi.Target, error) { return errandapi.Target{Function: s}, nil }, &err, "function")
	}
	if set("rate") {
		r.RatePerSecond = nullable(q.rate, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }, &err, "rate")
	}
	if set("max-concurrent") {
		r.MaxConcurrent = nullable(q.maxConcurrent, strconv.Atoi, &err, "max-concurrent")
	}
	if set("max-age") {
		r.MaxAgeSeconds = nullable(q.maxAge, func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }, &err, "max-age")
	}
	if set("dead-letter-queue") {
		r.DeadLetterQueue = nullable(q.deadLetter, func(s string) (string, error) { return s, nil }, &err, "dead-letter-queue")
	}
	if set("max-attempts") {
		r.MaxAttempts = &q.maxAttempts
	}
	if set("max-doublings") {
		r.MaxDoublings = &q.maxDoublings
	}
	if set("deadline") {
		r.DeadlineSeconds = &q.deadline
	}
	if set("min-backoff") {
		r.MinBackoffSeconds = &q.minBackoff
	}
	if set("max-backoff") {
		r.MaxBackoffSeconds = &q.maxBackoff
	}
	if set("paused") {
		r.Paused = &q.paused
	}
	if set("target-control") {
		r.TargetControl = &q.targetControl
	}
	return r, err
}

// nullable parses a nullable setting's flag: "none" is null, anything else
// its value. A value that does not parse sets *errp (the first one wins).
func nullable[T any](s string, parse func(string) (T, error), errp *error, flag string) errandapi.Nullable[T] {
	if s == "none" {
		return errandapi.Null[T]()
	}
	v, err := parse(s)
	if err != nil {
		if *errp == nil {
			*errp = usageErrorf("--%s: %q is not a number (or none)", flag, s)
		}
		return errandapi.Nullable[T]{}
	}
	return errandapi.Value(v)
}
