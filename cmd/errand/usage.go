package main

import (
	"github.com/spf13/cobra"

	"github.com/errandhq/errand/client"
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
With --json: the usage object of GET /v1/tasks/{instance}/usage.`,
		Example: `  errand usage --instance jobs
  errand usage -i jobs --json | jq .averageBytesKept`,
		Args: noArgs,
	}
	f := apiCmd(c, true, false)
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, _ []string) error {
		u, err := cl.Usage(c.Context(), f.instance)
		if err != nil {
			return err
		}
		if f.json {
			return printJSON(c.OutOrStdout(), u)
		}
		t := newTable(c.OutOrStdout(), "DAY", "ADDED", "WEBHOOK", "FUNCTION", "CHANNEL", "PULL", "BYTES KEPT")
		for _, d := range u.Days {
			t.row(d.Date, d.TasksAdded, d.Deliveries.Webhook, d.Deliveries.Function, d.Deliveries.Channel, d.Deliveries.Pull, d.BytesKept)
		}
		t.row(u.Month, u.TasksAdded, u.Deliveries.Webhook, u.Deliveries.Function, u.Deliveries.Channel, u.Deliveries.Pull, u.AverageBytesKept)
		if err := t.flush(); err != nil {
			return err
		}
		return printf(c, "%s: %d tasks added, %d deliveries, %d bytes kept now, %d on average\n",
			u.Month, u.TasksAdded, u.Deliveries.Total, u.BytesKept, u.AverageBytesKept)
	})
	return c
}
