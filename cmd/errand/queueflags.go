package main

import (
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/errandhq/errand/errandapi"
)

// queueFlags are the settings of queues create and update. The nullable
// ones are strings so that update can clear them with "none"; every value
// is checked by the node, which names the field it refuses.
type queueFlags struct {
	mode, webhook, function, channel, rate, maxConcurrent, maxAge, deadLetter string
	headers                                                                   []string
	maxAttempts, maxDoublings, deadline                                       int
	minBackoff, maxBackoff                                                    seconds
	paused, targetControl                                                     bool
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
	addTargetFlags(fs, &q.webhook, &q.function, &q.channel, &q.headers, "target: ", clear)
	fs.StringVar(&q.rate, "rate", "", "ratePerSecond: deliveries started per second at most"+clear)
	fs.StringVar(&q.maxConcurrent, "max-concurrent", "", "maxConcurrent: deliveries in flight at most"+clear)
	fs.StringVar(&q.maxAge, "max-age", "", "maxAgeSeconds: a task older than this is not retried (or a duration: 72h)"+clear)
	fs.StringVar(&q.deadLetter, "dead-letter-queue", "", "deadLetterQueue: where a failed task's copy goes"+clear)
	fs.IntVar(&q.maxAttempts, "max-attempts", 0, "maxAttempts: attempts of a task, the first included")
	fs.IntVar(&q.maxDoublings, "max-doublings", 0, "maxDoublings: how many times the backoff doubles")
	fs.IntVar(&q.deadline, "deadline", 0, "deadlineSeconds: how long one attempt may take")
	fs.Var(&q.minBackoff, "min-backoff", "minBackoffSeconds: the first wait before a retry (or a duration: 30s, 5m)")
	fs.Var(&q.maxBackoff, "max-backoff", "maxBackoffSeconds: the longest wait before a retry (or a duration: 1h)")
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
	name, val, terr := oneTarget(c, "a queue", q.webhook, q.function, q.channel)
	if terr != nil {
		return r, terr
	}
	switch {
	case name != "" && val == "none":
		if len(q.headers) > 0 {
			return r, usageErrorf("--header goes with a --webhook URL, not none")
		}
		r.Target = errandapi.Null[errandapi.Target]()
	case name != "":
		t, terr := targetOf(name, val, q.headers)
		if terr != nil {
			return r, terr
		}
		r.Target = errandapi.Value(t)
	case len(q.headers) > 0:
		return r, usageErrorf("--header goes with --webhook: give the target's URL too")
	}
	if set("rate") {
		r.RatePerSecond = nullable(q.rate, finite, &err, "rate", "a number")
	}
	if set("max-concurrent") {
		r.MaxConcurrent = nullable(q.maxConcurrent, strconv.Atoi, &err, "max-concurrent", "a whole number")
	}
	if set("max-age") {
		r.MaxAgeSeconds = nullable(q.maxAge, wholeSeconds, &err, "max-age", "whole seconds or a duration (24h)")
	}
	if set("dead-letter-queue") {
		r.DeadLetterQueue = nullable(q.deadLetter, func(s string) (string, error) { return s, nil }, &err, "dead-letter-queue", "")
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
		v := float64(q.minBackoff)
		r.MinBackoffSeconds = &v
	}
	if set("max-backoff") {
		v := float64(q.maxBackoff)
		r.MaxBackoffSeconds = &v
	}
	if set("paused") {
		r.Paused = &q.paused
	}
	if set("target-control") {
		r.TargetControl = &q.targetControl
	}
	return r, err
}

// queueFields names the flags of queues create and update that set the
// API's fields (see fieldFlags); the queue's NAME is an argument, not a flag.
var queueFields = targetFields.with(fieldFlags{
	"mode": {"mode"}, "ratePerSecond": {"rate"}, "maxConcurrent": {"max-concurrent"}, "maxAgeSeconds": {"max-age"},
	"deadLetterQueue": {"dead-letter-queue"}, "maxAttempts": {"max-attempts"}, "maxDoublings": {"max-doublings"},
	"deadlineSeconds": {"deadline"}, "minBackoffSeconds": {"min-backoff"}, "maxBackoffSeconds": {"max-backoff"},
	"paused": {"paused"}, "targetControl": {"target-control"},
})

// addTargetFlags registers --webhook, --function and --channel, the three
// kinds of target (exclusive: see oneTarget), and --header, a header a
// webhook target sends. what starts each usage; tail ends it.
func addTargetFlags(fs *pflag.FlagSet, webhook, function, channel *string, headers *[]string, what, tail string) {
	fs.StringVar(webhook, "webhook", "", what+"the https URL each task is POSTed to"+tail)
	fs.StringArrayVar(headers, "header", nil, `with --webhook: a header each delivery sends, "Name: value" (repeat for more; answers show the value as `+
		errandapi.HiddenHeaderValue+`, and "Name: `+errandapi.HiddenHeaderValue+`" keeps the value set before, toward the same host)`)
	fs.StringVar(function, "function", "", what+"the function GROUP/NAME that runs each task, served by a connected worker (the worker package) or an embedded engine"+tail)
	fs.StringVar(channel, "channel", "", what+"the channel NAME each task is published to, for its subscribers"+tail)
}

// oneTarget returns the target flag given, if any, and its value; more
// than one is a usage error (whose is "a queue" or "a task": it has one
// target).
func oneTarget(c *cobra.Command, whose, webhook, function, channel string) (name, value string, err error) {
	var given []string
	for _, t := range []struct{ name, value string }{{"webhook", webhook}, {"function", function}, {"channel", channel}} {
		if c.Flags().Changed(t.name) {
			given = append(given, "--"+t.name)
			name, value = t.name, t.value
		}
	}
	if len(given) > 1 {
		return "", "", usageErrorf("%s are exclusive: %s has one target", strings.Join(given, " and "), whose)
	}
	return name, value, nil
}

// targetOf is the target that the flag name (webhook, function or channel)
// gives with value, and the --header flags given (webhook only).
func targetOf(name, value string, headers []string) (errandapi.Target, error) {
	if len(headers) > 0 && name != "webhook" {
		return errandapi.Target{}, usageErrorf("--header goes with --webhook: only a webhook target sends headers")
	}
	switch name {
	case "webhook":
		t := errandapi.Target{Webhook: value}
		for _, h := range headers {
			k, v, ok := strings.Cut(h, ":")
			if !ok || strings.TrimSpace(k) == "" {
				return t, usageErrorf(`--header %q: want "Name: value"`, h)
			}
			if t.Headers == nil {
				t.Headers = map[string]string{}
			}
			t.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
		return t, nil
	case "function":
		return errandapi.Target{Function: value}, nil
	}
	return errandapi.Target{Channel: value}, nil
}

// nullable parses a nullable setting's flag: "none" is null, anything else
// its value. A value that does not parse sets *errp (the first one wins).
func nullable[T any](s string, parse func(string) (T, error), errp *error, flag, what string) errandapi.Nullable[T] {
	if s == "none" {
		return errandapi.Null[T]()
	}
	v, err := parse(s)
	if err != nil {
		if *errp == nil {
			*errp = usageErrorf("--%s: %q is not %s (or none)", flag, s, what)
		}
		return errandapi.Nullable[T]{}
	}
	return errandapi.Value(v)
}
