package main

import (
	"errors"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

func newGetCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "get ID",
		Short: "Show one task with its payload, result and attempts",
		Long: `Show one task whole: its state, payload, params, result, target and every
attempt with its outcome. With --json: {"task": {...}} as the API answers.
With --wait it first waits until the task has ended (succeeded, failed or cancelled), for as
long as it takes (bound it with timeout(1)); the exit code is then 1 unless it succeeded.`,
		Example: `  errand get -i jobs 01J9Z3K1V8M2Q4R6T8W0Y2A4C6
  errand get -i jobs 01J9Z3K1V8M2Q4R6T8W0Y2A4C6 --json | jq .task.attempts
  errand get -i jobs 01J9Z3K1V8M2Q4R6T8W0Y2A4C6 --wait --json | jq .task.result`,
		Args: exactArgs("ID"),
	}
	f := apiCmd(c, true, false)
	var wait bool
	c.Flags().BoolVar(&wait, "wait", false, "wait until the task has ended; exit 1 unless it succeeded")
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, args []string) error {
		if wait {
			return waitTask(c, f, cl, args[0])
		}
		t, err := cl.GetTask(c.Context(), f.instance, args[0])
		if err != nil {
			return err
		}
		return printTask(c, f, t)
	})
	return c
}

// waitTask waits until task id has ended and prints it; a task that did
// not succeed is exit code 1, with its state and last error on stderr.
func waitTask(c *cobra.Command, f *apiFlags, cl *client.Client, id string) error {
	t, err := cl.WaitTask(c.Context(), f.instance, id)
	if err != nil {
		return err
	}
	if err := printTask(c, f, t); err != nil {
		return err
	}
	if t.State == errandapi.StateSucceeded {
		return nil
	}
	msg := "the task ended " + string(t.State)
	if t.LastError != nil && *t.LastError != "" {
		msg += ": " + short(*t.LastError, 200)
	}
	c.PrintErrf("%s: %s\n", c.CommandPath(), msg)
	return &quietError{errors.New(msg)}
}

// printTask prints a task as --json asks, or as "field  value" lines and
// its attempts.
func printTask(c *cobra.Command, f *apiFlags, t *errandapi.Task) error {
	if f.json {
		return printJSON(c.OutOrStdout(), errandapi.TaskResponse{Task: t})
	}
	tb := newTable(c.OutOrStdout(), "id", t.ID)
	tb.row("queue", t.Queue)
	tb.row("name", strPtr(t.Name))
	tb.row("state", t.State)
	tb.row("attempt", attempts(t.Attempt, t.MaxAttempts))
	tb.row("runAt", when(t.RunAt))
	if t.Priority != 0 {
		tb.row("priority", strconv.Itoa(t.Priority))
	}
	tb.row("created", when(t.CreatedAt))
	tb.row("finished", whenPtr(t.FinishedAt))
	if t.LeaseExpiresAt != nil {
		tb.row("leaseExpires", whenPtr(t.LeaseExpiresAt))
	}
	tb.row("target", target(t.Target))
	tb.row("source", t.Source)
	if len(t.Payload) > 0 {
		tb.row("payload", short(string(t.Payload), 200))
	}
	if len(t.Params) > 0 && string(t.Params) != "null" {
		tb.row("params", short(string(t.Params), 200))
	}
	if len(t.Result) > 0 && string(t.Result) != "null" {
		tb.row("result", short(string(t.Result), 200))
	}
	tb.row("lastError", strPtr(t.LastError))
	if err := tb.flush(); err != nil {
		return err
	}
	if len(t.Attempts) == 0 {
		return nil
	}
	c.Println()
	at := newTable(c.OutOrStdout(), "ATTEMPT", "STATUS", "STARTED", "ENDED", "HTTP", "ERROR")
	for _, a := range t.Attempts {
		http := "-"
		if a.HTTPStatus != nil {
			http = itoa(*a.HTTPStatus)
		}
		at.row(a.Attempt, a.Status, when(a.StartedAt), whenPtr(a.EndedAt), http, short(strPtr(a.Error), 80))
	}
	return at.flush()
}

func itoa(n int) string { return strconv.Itoa(n) }

// short cuts s to n runes on one line, with … when cut.
func short(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
