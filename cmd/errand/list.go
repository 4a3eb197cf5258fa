package main

import (
	"strconv"

	"github.com/spf13/cobra"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

func newListCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "list",
		Short: "List a queue's tasks",
		Long: `List a queue's tasks, newest pages first as the API orders them, without their
payloads (errand get shows one task whole). --state and --name select; --limit is the page
size (1–200, default 50). Without --all one page is printed, and the cursor of the next
(pass it with --cursor); with --all every page is read. No task to show leaves the table out
and says so on stderr. With --json: {"tasks": [...],
"cursor": …} as the API answers a page (with --all, every task and a null cursor).`,
		Example: `  errand list -i jobs -q emails
  errand list -i jobs -q emails --state failed --all
  errand list -i jobs -q emails --name receipt-o-1041 --json | jq -r '.tasks[0].id // empty'`,
		Args: noArgs,
	}
	f := apiCmd(c, true, true)
	var o client.ListOptions
	var state string
	var all bool
	c.Flags().StringVar(&state, "state", "", "only tasks in this state: scheduled, running, leased, retrying, succeeded, failed or cancelled")
	c.Flags().StringVar(&o.Name, "name", "", "only the task of this name")
	c.Flags().IntVar(&o.Limit, "limit", 0, "tasks per page, 1–200 (the node's default: 50)")
	c.Flags().StringVar(&o.Cursor, "cursor", "", "the page after the one that printed this cursor")
	c.Flags().BoolVar(&all, "all", false, "read every page")
	f.fields = fieldFlags{"state": {"state"}, "name": {"name"}, "limit": {"limit"}, "cursor": {"cursor"}}
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, _ []string) error {
		// Sent as given, an empty --name or a --limit of 0 would read as
		// not given: every task, 50 a page.
		if c.Flags().Changed("name") && o.Name == "" {
			return usageErrorf("--name is empty: leave it out to list every task")
		}
		if c.Flags().Changed("limit") && o.Limit < 1 {
			return usageErrorf("--limit %d: a page holds 1–200 tasks", o.Limit)
		}
		o.State = errandapi.State(state)
		var page errandapi.TaskPage
		if all {
			page.Tasks = []errandapi.Task{}
			for t, err := range cl.Tasks(c.Context(), f.instance, f.queue, o) {
				if err != nil {
					return err
				}
				page.Tasks = append(page.Tasks, *t)
			}
		} else {
			p, err := cl.ListTasks(c.Context(), f.instance, f.queue, o)
			if err != nil {
				return err
			}
			page = *p
		}
		if f.json {
			return printJSON(c.OutOrStdout(), page)
		}
		if len(page.Tasks) == 0 {
			c.PrintErrf("no tasks%s in queue %s\n", listFilter(o), f.queue)
		} else {
			t := newTable(c.OutOrStdout(), "ID", "NAME", "STATE", "ATTEMPT", "RUN AT", "CREATED", "LAST ERROR")
			for _, k := range page.Tasks {
				state := string(k.State)
				if k.Priority != 0 { // as the console shows it
					state += " p" + strconv.Itoa(k.Priority)
				}
				t.row(k.ID, strPtr(k.Name), state, attempts(k.Attempt, k.MaxAttempts), when(k.RunAt), when(k.CreatedAt), short(strPtr(k.LastError), 60))
			}
			if err := t.flush(); err != nil {
				return err
			}
		}
		if page.Cursor != nil { // (--json carries the cursor itself)
			c.PrintErrf("more: errand list -i %s -q %s --cursor %s\n", f.instance, f.queue, *page.Cursor)
		}
		return nil
	})
	return c
}

func attempts(n, max int) string {
	return itoa(n) + "/" + itoa(max)
}

// listFilter describes a list's selection for its "no tasks" line.
func listFilter(o client.ListOptions) string {
	s := ""
	if o.State != "" {
		s += " " + string(o.State)
	}
	if o.Name != "" {
		s += " named " + o.Name
	}
	if o.Cursor != "" {
		s += " after that cursor"
	}
	return s
}
