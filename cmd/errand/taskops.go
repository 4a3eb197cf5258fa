package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

// taskOp is one of the commands that change a task by id: run, cancel,
// retry, delete, prioritize, reschedule.
type taskOp struct {
	verb, short, long, example string
	call                       func(*client.Client, context.Context, string, string) (*errandapi.Task, error)
	// destructive: the command needs --yes, and says what it removed.
	destructive bool
	// fields names the command's own flags in the node's refusals.
	fields fieldFlags
	// line, if set, is what the command prints of a task it changed
	// (else its id and state).
	line func(t *errandapi.Task) string
}

var (
	taskRun = taskOp{"run", "Make scheduled or retrying tasks due now",
		`Make scheduled or retrying tasks due now: they are delivered (push) or can be leased
(pull) at once. A finished task is refused with NOT_RUNNABLE.`,
		"  errand run -i jobs 01J9Z3K1V8M2Q4R6T8W0Y2A4C6", (*client.Client).RunTask, false, nil, nil}
	taskCancel = taskOp{"cancel", "Cancel tasks that have not started or are waiting for a retry",
		`Cancel tasks that are scheduled or retrying (waiting for their next attempt). A task
whose attempt is under way, delivered to its push target or leased by a worker, cannot be
stopped: it is refused with RUNNING_NOT_CANCELLABLE and left running; a finished one is
refused with NOT_CANCELLABLE.`,
		"  errand cancel -i jobs 01J9Z3K1V8M2Q4R6T8W0Y2A4C6 01J9Z3K1V8M2Q4R6T8W0Y2A4C7", (*client.Client).CancelTask, false, nil, nil}
	taskRetry = taskOp{"retry", "Give failed tasks a fresh budget and run them now",
		`Give failed tasks a fresh budget of attempts and make them due now. Only a failed
task can be retried (NOT_RETRYABLE otherwise).`,
		"  errand list -i jobs -q emails --state failed --all --json | jq -r '.tasks[].id' | xargs -r errand retry -i jobs", (*client.Client).RetryTask, false, nil, nil}
	taskDelete = taskOp{"delete", "Remove tasks' records, freeing their names",
		`Remove tasks' records at once (the key needs the full grant): a scheduled or retrying
task will not run, a finished one's payload, result and attempts are gone, and its name is
free for a new add. A task whose attempt is under way is refused with
RUNNING_NOT_CANCELLABLE and left as it is. Needs --yes. Prints each task as it was.`,
		"  errand delete -i jobs 01J9Z3K1V8M2Q4R6T8W0Y2A4C6 --yes", (*client.Client).DeleteTask, true, nil, nil}
)

// newPrioritizeCmd makes prioritize: PATCH …/tasks/{id} with --priority,
// for each id.
func newPrioritizeCmd() *cobra.Command {
	var priority int
	op := taskOp{verb: "prioritize", short: "Change tasks' priority",
		long: `Change tasks' priority (--priority, 0–9; higher goes first): a queue's due tasks are
delivered (push) or leased (pull) from the highest priority down, each priority in runAt
order. It applies whenever the task waits for a claim: at once for a scheduled or retrying
task, from its next retry for a running or leased one, after errand retry for a failed
one.`,
		example: "  errand prioritize -i jobs --priority 9 01J9Z3K1V8M2Q4R6T8W0Y2A4C6",
		call: func(cl *client.Client, ctx context.Context, instance, id string) (*errandapi.Task, error) {
			return cl.UpdateTask(ctx, instance, id, errandapi.TaskPatchRequest{Priority: &priority})
		},
		fields: fieldFlags{"priority": {"priority"}},
		line: func(t *errandapi.Task) string {
			return fmt.Sprintf("%s %s, priority %d\n", t.ID, t.State, t.Priority)
		},
	}
	c := newTaskOpCmd(op)
	c.Flags().IntVar(&priority, "priority", 0, "the priority, 0–9 (higher goes first; 0 is the default)")
	run := c.RunE
	c.RunE = func(c *cobra.Command, args []string) error {
		if !c.Flags().Changed("priority") {
			return usageErrorf("--priority is required: the priority to give, 0–9")
		}
		return run(c, args)
	}
	return c
}

// newRescheduleCmd makes reschedule: PATCH …/tasks/{id} with --delay or
// --run-at, for each id.
func newRescheduleCmd() *cobra.Command {
	var delay seconds
	var runAt string
	var patch errandapi.TaskPatchRequest
	op := taskOp{verb: "reschedule", short: "Move waiting tasks' due time",
		long: `Move scheduled or retrying tasks' due time: --delay seconds from now, or --run-at a time
(RFC 3339 or epoch milliseconds; a time past means now), at most a year ahead, as errand add
takes them. A retrying task stays retrying until then. A running or leased task (its next
wait is its backoff's) and a finished one are refused with NOT_RUNNABLE; errand run makes a
waiting task due now too.`,
		example: "  errand reschedule -i jobs --delay 3600 01J9Z3K1V8M2Q4R6T8W0Y2A4C6\n" +
			"  errand reschedule -i jobs --run-at 2026-12-24T09:00:00Z 01J9Z3K1V8M2Q4R6T8W0Y2A4C6",
		call: func(cl *client.Client, ctx context.Context, instance, id string) (*errandapi.Task, error) {
			return cl.UpdateTask(ctx, instance, id, patch)
		},
		fields: fieldFlags{"delay": {"delay"}, "runAt": {"run-at"}},
		line: func(t *errandapi.Task) string {
			return fmt.Sprintf("%s %s, due %s\n", t.ID, t.State, when(t.RunAt))
		},
	}
	c := newTaskOpCmd(op)
	c.Flags().Var(&delay, "delay", "seconds from now the tasks are due (fractions allowed), or a duration: 90s, 5m, 1h30m")
	c.Flags().StringVar(&runAt, "run-at", "", "when the tasks are due: RFC 3339 (2026-01-02T15:04:05Z) or epoch milliseconds")
	run := c.RunE
	c.RunE = func(c *cobra.Command, args []string) error {
		byDelay, byTime := c.Flags().Changed("delay"), c.Flags().Changed("run-at")
		switch {
		case byDelay && byTime:
			return usageErrorf("--delay and --run-at are exclusive: give one")
		case byDelay:
			d := float64(delay)
			patch.Delay = &d
		case byTime:
			ms, err := parseRunAt(runAt)
			if err != nil {
				return err
			}
			patch.RunAt = &ms
		default:
			return usageErrorf("--delay or --run-at is required: when the tasks are due")
		}
		return run(c, args)
	}
	return c
}

// newTaskOpCmd makes run, cancel, retry, delete, prioritize or
// reschedule: each takes one id or more and goes on past a refusal,
// exiting 1 if any was refused.
func newTaskOpCmd(op taskOp) *cobra.Command {
	c := &cobra.Command{
		Use:   op.verb + " ID…",
		Short: op.short,
		Long: op.long + ` With several ids each is tried in turn; the exit code is 1
if any was refused, each refusal on stderr. With --json: the API's answer for each task
changed, {"task": {...}}, one a line.`,
		Example: op.example,
		Args:    minArgs("ID"),
	}
	var yes *bool
	if op.destructive {
		yes = confirmFlag(c)
	}
	f := apiCmd(c, true, false)
	f.fields = op.fields
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, ids []string) error {
		if yes != nil && !*yes {
			return needYes("deleting a task's record")
		}
		var first error
		refused := 0
		for _, id := range ids {
			t, err := op.call(cl, c.Context(), f.instance, id)
			var ae *errandapi.Error
			if errors.As(err, &ae) && len(ids) > 1 {
				c.PrintErrf("%s: %s: %s: %s\n", c.CommandPath(), id, ae.Code, cliRefusal(ae))
				refused++
				if first == nil {
					first = err
				}
				continue
			}
			if err != nil {
				return err
			}
			if f.json {
				if err := compactJSON(c.OutOrStdout(), errandapi.TaskResponse{Task: t}); err != nil {
					return err
				}
				continue
			}
			line := fmt.Sprintf("%s %s\n", t.ID, t.State)
			if op.line != nil {
				line = op.line(t)
			}
			if op.destructive {
				line = fmt.Sprintf("%s deleted (it was %s)\n", t.ID, t.State)
			}
			if err := printf(c, "%s", line); err != nil {
				return err
			}
		}
		if refused > 0 {
			return &quietError{first}
		}
		return nil
	})
	return c
}
