package main

import (
	"strconv"

	"github.com/spf13/cobra"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

func newUsageCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "usage",
		Short: "Show an instance's usage this month",
		Long: `Show what an instance used in the current calendar month (UTC): tasks added,
deliveries by target kind (webhook, function, channel; pull for tasks handed out by
leases; every attempt counts), and the bytes its tasks keep, per day from the 1st to
today, with the month's totals and average of bytes kept. A node adds its counts to
the store every 10 seconds, so another node's latest counts may take that long to show.
The last row is the month: its totals, and in BYTES KEPT the month's average (avg N), not
a total. With --json: {"usage": {...}} as GET /v1/tasks/{instance}/usage answers.`,
		Example: `  errand usage --instance jobs
  errand usage -i jobs --json | jq .usage.averageBytesKept`,
		Args: noArgs,
	}
	f := apiCmd(c, true, false)
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, _ []string) error {
		u, err := cl.Usage(c.Context(), f.instance)
		if err != nil {
			return err
		}
		if f.json {
			return printJSON(c.OutOrStdout(), errandapi.UsageResponse{Usage: *u})
		}
		t := newTable(c.OutOrStdout(), "DAY", "ADDED", "WEBHOOK", "FUNCTION", "CHANNEL", "PULL", "BYTES KEPT")
		for _, d := range u.Days {
			t.row(d.Date, d.TasksAdded, d.Deliveries.Webhook, d.Deliveries.Function, d.Deliveries.Channel, d.Deliveries.Pull, d.BytesKept)
		}
		// Bytes kept is a level, not a flow: the month's row shows its
		// average, said so, where the other columns show totals.
		t.row(u.Month+" total", u.TasksAdded, u.Deliveries.Webhook, u.Deliveries.Function, u.Deliveries.Channel, u.Deliveries.Pull,
			"avg "+strconv.FormatInt(u.AverageBytesKept, 10))
		if err := t.flush(); err != nil {
			return err
		}
		return printf(c, "%s: %d tasks added, %d deliveries, %d bytes kept now, %d on average\n",
			u.Month, u.TasksAdded, u.Deliveries.Total, u.BytesKept, u.AverageBytesKept)
	})
	return c
}
