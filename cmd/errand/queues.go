package main

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

func newQueuesCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:     "queues",
		Aliases: []string{"queue"},
		Short:   "List, create, change, purge and delete queues",
		Long: `A queue holds tasks and says how they are delivered: a push queue sends each task
to its target (a webhook), a pull queue keeps it for workers to lease. Its settings
(retries, backoff, rate, concurrency, dead-letter queue) apply to every task in it. Every
subcommand acts in one instance, given with --instance or ERRAND_INSTANCE.`,
		Example: `  errand queues list -i jobs
  errand queues create emails -i jobs --mode pull
  errand queues create hooks -i jobs --webhook https://example.com/hook --max-attempts 5
  errand queues create api -i jobs --webhook https://api.example.com/in --header 'Authorization: Bearer s3cret'
  errand queues update hooks -i jobs --paused
  errand queues purge emails -i jobs --yes`,
	}, newQueuesListCmd(), newQueuesGetCmd(), newQueuesCreateCmd(), newQueuesUpdateCmd(),
		newQueuesDeleteCmd(), newQueuesPurgeCmd())
}

func newQueuesListCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "list",
		Short: "List an instance's queues with their counts by state",
		Long: `List an instance's queues with their mode, target and counts of tasks by state.
Each count stops at 10,000 (shown as 10000+). With --json: {"queues": [...]}, as the API
answers.`,
		Example: `  errand queues list -i jobs
  errand queues list -i jobs --json`,
		Args: noArgs,
	}
	f := apiCmd(c, true, false)
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, _ []string) error {
		qs, err := cl.ListQueues(c.Context(), f.instance)
		if err != nil {
			return err
		}
		if f.json {
			return printJSON(c.OutOrStdout(), map[string]any{"queues": qs})
		}
		t := newTable(c.OutOrStdout(), "NAME", "MODE", "TARGET", "PAUSED", "SCHEDULED", "IN FLIGHT", "RETRYING", "SUCCEEDED", "FAILED", "CANCELLED")
		for _, q := range qs {
			t.row(q.Name, q.Mode, target(q.Target), q.Paused,
				count(&q, errandapi.StateScheduled), count(&q, errandapi.StateRunning, errandapi.StateLeased),
				count(&q, errandapi.StateRetrying), count(&q, errandapi.StateSucceeded), count(&q, errandapi.StateFailed),
				count(&q, errandapi.StateCancelled))
		}
		return t.flush()
	})
	return c
}

// count is the queue's count of tasks in the states, "N+" when capped.
func count(q *errandapi.Queue, states ...errandapi.State) string {
	n, capped := 0, false
	for _, s := range states {
		n += q.Counts[s]
		capped = capped || slices.Contains(q.Capped, s)
	}
	if capped {
		return strconv.Itoa(n) + "+"
	}
	return strconv.Itoa(n)
}

// target names a target in a table: its URL (and the headers it sends),
// function:GROUP/NAME, channel:NAME, or - for none.
func target(t *errandapi.Target) string {
	switch {
	case t == nil:
		return "-"
	case t.Webhook != "" && len(t.Headers) > 0:
		return t.Webhook + " with headers " + strings.Join(slices.Sorted(maps.Keys(t.Headers)), ", ")
	case t.Webhook != "":
		return t.Webhook
	case t.Function != "":
		return "function:" + t.Function
	case t.Channel != "":
		return "channel:" + t.Channel
	}
	return "-"
}

func newQueuesGetCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "get NAME",
		Short: "Show one queue's settings and counts",
		Long: `Show one queue: its mode, target, every setting and its counts of tasks by state.
With --json: {"queue": {...}} as the API answers.`,
		Example: `  errand queues get emails -i jobs
  errand queues get emails -i jobs --json | jq .queue.counts`,
		Args: exactArgs("NAME"),
	}
	f := apiCmd(c, true, false)
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, args []string) error {
		q, err := cl.GetQueue(c.Context(), f.instance, args[0])
		return showQueue(c, f, q, err)
	})
	return c
}

// showQueue prints the queue a call answered, or returns its error.
func showQueue(c *cobra.Command, f *apiFlags, q *errandapi.Queue, err error) error {
	if err != nil {
		return err
	}
	if f.json {
		return printJSON(c.OutOrStdout(), errandapi.QueueResponse{Queue: q})
	}
	return printQueue(c, q)
}

// printQueue prints a queue as "field  value" lines.
func printQueue(c *cobra.Command, q *errandapi.Queue) error {
	t := newTable(c.OutOrStdout(), "name", q.Name)
	t.row("mode", q.Mode)
	t.row("target", target(q.Target))
	t.row("paused", q.Paused)
	t.row("ratePerSecond", optional(q.RatePerSecond))
	t.row("maxConcurrent", optional(q.MaxConcurrent))
	t.row("maxAttempts", q.MaxAttempts)
	t.row("backoff", fmt.Sprintf("%gs–%gs, %d doublings", q.MinBackoffSeconds, q.MaxBackoffSeconds, q.MaxDoublings))
	t.row("maxAgeSeconds", optional(q.MaxAgeSeconds))
	t.row("deadlineSeconds", q.DeadlineSeconds)
	t.row("deadLetterQueue", strPtr(q.DeadLetterQueue))
	t.row("targetControl", q.TargetControl)
	t.row("created", when(q.CreatedAt))
	if q.Counts != nil {
		var parts []string
		for _, s := range []errandapi.State{errandapi.StateScheduled, errandapi.StateRunning, errandapi.StateLeased,
			errandapi.StateRetrying, errandapi.StateSucceeded, errandapi.StateFailed, errandapi.StateCancelled} {
			if _, ok := q.Counts[s]; ok {
				parts = append(parts, string(s)+" "+count(q, s))
			}
		}
		t.row("counts", strings.Join(parts, ", "))
	}
	return t.flush()
}

func optional[T any](p *T) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

func newQueuesCreateCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a queue",
		Long: `Create a queue. --mode is push (the default: each task goes to a target, given
here with one of --webhook, --function or --channel, or on each task) or pull (workers lease
tasks with errand lease). Settings not given take the API's defaults; the node checks every
value and names the one it refuses. A name that is taken is refused with QUEUE_EXISTS. With
--json: {"queue": {...}} as the API answers.`,
		Example: `  errand queues create emails -i jobs --mode pull
  errand queues create hooks -i jobs --webhook https://example.com/hook --max-attempts 5 --rate 10
  errand queues create receipts -i jobs --function app/send-receipt
  errand queues create chat -i jobs --channel room-1`,
		Args: exactArgs("NAME"),
	}
	qf := addQueueFlags(c, false)
	f := apiCmd(c, true, false)
	f.fields = queueFields
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, args []string) error {
		req, err := qf.request(c)
		if err != nil {
			return err
		}
		q, err := cl.CreateQueue(c.Context(), f.instance, args[0], req)
		if err != nil {
			return err
		}
		if f.json {
			return printJSON(c.OutOrStdout(), errandapi.QueueResponse{Queue: q})
		}
		return printf(c, "created %s queue %s in instance %s\n", q.Mode, q.Name, f.instance)
	})
	return c
}

func newQueuesUpdateCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "update NAME",
		Short: "Change a queue's settings",
		Long: `Change only the settings given; the others keep their values. A setting that may
be unset (the target: --webhook, --function or --channel; --rate, --max-concurrent,
--max-age, --dead-letter-queue) is cleared with the value "none". --paused stops deliveries
and leases; --paused=false resumes them. With --json: {"queue": {...}} as the API answers.`,
		Example: `  errand queues update hooks -i jobs --paused
  errand queues update hooks -i jobs --paused=false --rate none
  errand queues update emails -i jobs --max-attempts 10 --dead-letter-queue emails-dead`,
		Args: exactArgs("NAME"),
	}
	qf := addQueueFlags(c, true)
	f := apiCmd(c, true, false)
	f.fields = queueFields
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, args []string) error {
		req, err := qf.request(c)
		if err != nil {
			return err
		}
		if reflect.DeepEqual(req, errandapi.QueueRequest{}) {
			return usageErrorf("no setting to change: give at least one flag (see --help)")
		}
		q, err := cl.UpdateQueue(c.Context(), f.instance, args[0], req)
		return showQueue(c, f, q, err)
	})
	return c
}

func newQueuesDeleteCmd() *cobra.Command {
	return newQueueRemoveCmd("delete", "Delete a queue and its tasks",
		`Delete a queue with every task in it. It cannot be undone, so --yes is required.
The answer is the number of tasks removed (with --json: {"deleted": N, "pending": false}
as the API answers).`,
		(*client.Client).DeleteQueue)
}

func newQueuesPurgeCmd() *cobra.Command {
	return newQueueRemoveCmd("purge", "Remove every task of a queue, keeping the queue",
		`Remove every task of a queue; the queue and its settings stay. It cannot be undone,
so --yes is required. The answer is the number of tasks removed (with --json:
{"deleted": N, "pending": false} as the API answers).`,
		(*client.Client).PurgeQueue)
}

// newQueueRemoveCmd is queues delete or purge: both confirm, call, and say
// how many tasks went.
func newQueueRemoveCmd(verb, short, long string, call func(*client.Client, context.Context, string, string) (int, error)) *cobra.Command {
	c := &cobra.Command{
		Use:     verb + " NAME --yes",
		Short:   short,
		Long:    long,
		Example: "  errand queues " + verb + " emails -i jobs --yes",
		Args:    exactArgs("NAME"),
	}
	yes := confirmFlag(c)
	f := apiCmd(c, true, false)
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, args []string) error {
		if !*yes {
			return needYes(verb + " of queue " + args[0])
		}
		n, err := call(cl, c.Context(), f.instance, args[0])
		if err != nil {
			return err
		}
		if f.json {
			return printJSON(c.OutOrStdout(), errandapi.DeleteResponse{Deleted: n})
		}
		return printf(c, "%s queue %s: %d tasks removed\n", map[string]string{"delete": "deleted", "purge": "purged"}[verb], args[0], n)
	})
	return c
}
