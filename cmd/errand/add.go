package main

import (
	"encoding/json"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

func newAddCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "add",
		Short: "Add a task, or every task of a JSONL file",
		Long: `Add one task given by flags, or with --file every task of a JSON Lines file (--file -
reads stdin): one task a line, in the shape the API adds ({"payload": …, "name": …,
"params": …, "target": {"webhook": …}, "delay": seconds, "runAt": epoch ms,
"deadlineSeconds": …, "priority": 0–9}); blank lines are skipped. A file is sent in
batches of 100, with a progress bar on a terminal, and ends with a summary: tasks added,
tasks whose name already existed (a second run of the same file adds nothing twice) and
lines refused, each with its line number, code and reason. The exit code is 1 when a line was refused. A refusal of the
whole call (an unknown queue, a bad key) stops the file there.
A task's own target is one of --webhook, --function or --channel.
--priority (0–9, default 0): the queue's due tasks of a higher priority are delivered or
leased first, each priority in runAt order.
With --json: for one task, the API's answer {"tasks": [{"ok", "id", "name", "state",
"runAt"}]}; for a file, the summary {"added", "existing", "refused": [{"line", "code",
"message"}]}.
With --wait (one task) it then waits until the task has ended and prints it as "errand get"
does ({"task": {...}} with --json); the exit code is 1 unless it succeeded.
--delivery-token (or ERRAND_DELIVERY_TOKEN) adds the tasks as follow-ups of the work on a
task: its delivery token, from errand lease --delivery-tokens or a delivery's
X-Errand-Delivery header, gives them its depth + 1 and its source (a chain deeper than 8 is
DEPTH_EXCEEDED).`,
		Example: `  errand add -i jobs -q emails --payload '{"orderId":"o-1041"}' --name receipt-o-1041 --delay 60
  errand add -i jobs -q hooks --payload '{}' --webhook https://example.com/hook
  errand add -i jobs -q hooks --payload '{}' --webhook https://api.example.com/in --header 'Authorization: Bearer s3cret'
  errand add -i jobs -q default --payload '{"text":"hi"}' --channel room-1
  errand add -i jobs -q emails --payload '{"orderId":"o-1042"}' --priority 5
  errand add -i jobs -q emails --file tasks.jsonl
  errand add -i jobs -q resize --payload '{"image":"a.png"}' --wait --json | jq .task.result
  jq -c '.[]' orders.json | errand add -i jobs -q emails --file - --json`,
		Args: noArgs,
	}
	f := apiCmd(c, true, true)
	var file, payload, params, name, webhook, function, channel, runAt string
	var headers []string
	var delay seconds
	var deadline, priority int
	fs := c.Flags()
	fs.StringVar(&file, "file", "", "add every task of this JSON Lines file (- for stdin)")
	fs.StringVar(&payload, "payload", "", "the task's payload, any JSON (default null)")
	fs.StringVar(&params, "params", "", "the task's params, any JSON (as a webhook's body carries them)")
	fs.StringVar(&name, "name", "", "the task's name: a second add of the name answers TASK_EXISTS")
	fs.Var(&delay, "delay", "seconds before the task is due (fractions allowed), or a duration: 90s, 5m, 1h30m")
	fs.StringVar(&runAt, "run-at", "", "when the task is due: RFC 3339 (2026-01-02T15:04:05Z) or epoch milliseconds")
	addTargetFlags(fs, &webhook, &function, &channel, &headers, "the task's own target (a push queue without a target needs one): ", "")
	fs.IntVar(&deadline, "deadline", 0, "deadlineSeconds of each attempt")
	fs.IntVar(&priority, "priority", 0, "0–9: the queue's due tasks of a higher priority go first")
	var wait bool
	fs.BoolVar(&wait, "wait", false, "wait until the task has ended and print it; exit 1 unless it succeeded")
	var token string
	fs.StringVar(&token, "delivery-token", os.Getenv("ERRAND_DELIVERY_TOKEN"), "the delivery token of the task whose work adds these (env ERRAND_DELIVERY_TOKEN)")
	single := []string{"payload", "params", "name", "delay", "run-at", "webhook", "header", "function", "channel", "deadline", "priority", "wait"}
	f.fields = targetFields.with(fieldFlags{"payload": {"payload"}, "params": {"params"}, "name": {"name"},
		"delay": {"delay"}, "runAt": {"run-at"}, "deadlineSeconds": {"deadline"}, "priority": {"priority"}, errandapi.DeliveryHeader: {"delivery-token"}})
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, _ []string) error {
		if token != "" {
			c.SetContext(client.WithDelivery(c.Context(), token))
		}
		if file != "" {
			for _, n := range single {
				if c.Flags().Changed(n) {
					return usageErrorf("--%s and --file are exclusive: a file's lines give their own fields", n)
				}
			}
			return addFile(c, f, cl, file)
		}
		if c.Flags().Changed("name") && name == "" {
			// Sent as no name, it would add a task a second run adds again.
			return usageErrorf("--name is empty: leave it out for a task without a name")
		}
		var t errandapi.NewTask
		t.Name = name
		for _, js := range []struct {
			flag, val string
			dst       *json.RawMessage
		}{{"payload", payload, &t.Payload}, {"params", params, &t.Params}} {
			if js.val == "" {
				continue
			}
			if !json.Valid([]byte(js.val)) {
				return usageErrorf("--%s is not JSON: %s", js.flag, short(js.val, 40))
			}
			*js.dst = json.RawMessage(js.val)
		}
		if c.Flags().Changed("delay") {
			d := float64(delay)
			t.Delay = &d
		}
		if runAt != "" {
			ms, err := parseRunAt(runAt)
			if err != nil {
				return err
			}
			t.RunAt = &ms
		}
		tname, tval, err := oneTarget(c, "a task", webhook, function, channel)
		if err != nil {
			return err
		}
		if tname == "" && len(headers) > 0 {
			return usageErrorf("--header goes with --webhook: give the target's URL too")
		}
		if tname != "" {
			tt, err := targetOf(tname, tval, headers)
			if err != nil {
				return err
			}
			t.Target = &tt
		}
		if c.Flags().Changed("deadline") {
			t.DeadlineSeconds = &deadline
		}
		if c.Flags().Changed("priority") {
			t.Priority = &priority
		}
		r, err := cl.AddTask(c.Context(), f.instance, f.queue, t)
		if err != nil {
			return err
		}
		if wait {
			if !f.json {
				if err := printf(c, "%s %s, due %s; waiting until it ends\n", r.ID, r.State, when(r.RunAt)); err != nil {
					return err
				}
			}
			return waitTask(c, f, cl, r.ID)
		}
		if f.json {
			return printJSON(c.OutOrStdout(), errandapi.AddResponse{Tasks: []errandapi.AddResult{*r}})
		}
		return printf(c, "%s %s, due %s\n", r.ID, r.State, when(r.RunAt))
	})
	return c
}

// parseRunAt reads --run-at: RFC 3339 or epoch milliseconds.
func parseRunAt(s string) (int64, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, usageErrorf("--run-at: %q is neither RFC 3339 (2026-01-02T15:04:05Z) nor epoch milliseconds", s)
	}
	return t.UnixMilli(), nil
}
