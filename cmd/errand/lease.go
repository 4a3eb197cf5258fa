package main

import (
	"github.com/spf13/cobra"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

func newLeaseCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "lease",
		Short: "Lease due tasks of a pull queue",
		Long: `Lease due tasks of a pull queue, as a worker does: each comes with a lease id that
errand ack (or errand extend, errand release) must give back before the lease expires;
a lease that expires counts as a failed attempt and the task is retried. --wait waits up
to that many seconds (at most 30) for a task to come due. A push queue is refused with
WRONG_MODE. Without a task to lease the table is left out and stderr says so. With
--json: {"tasks": [...]} as the API answers (an empty list when none).
--delivery-tokens gives each task its deliveryToken (in --json's answer): pass it to
errand add --delivery-token (or ERRAND_DELIVERY_TOKEN) for the tasks the work causes,
which then get the task's depth + 1 and source lease, so a chain of tasks adding tasks
stops at depth 8 (DEPTH_EXCEEDED) instead of looping.`,
		Example: `  errand lease -i jobs -q emails --count 10 --lease-seconds 120
  errand lease -i jobs -q emails --wait 30 --json | jq -r '.tasks[] | .id + " " + .leaseId'
  errand lease -i jobs -q crawl --delivery-tokens --json | jq -r '.tasks[0].deliveryToken'`,
		Args: noArgs,
	}
	f := apiCmd(c, true, true)
	var count, leaseSeconds, wait int
	c.Flags().IntVar(&count, "count", 1, "tasks to lease at most, 1–1000")
	c.Flags().IntVar(&leaseSeconds, "lease-seconds", 60, "how long the lease lasts, 1–86400")
	c.Flags().IntVar(&wait, "wait", 0, "seconds to wait for a task to come due, 0–30")
	var tokens bool
	c.Flags().BoolVar(&tokens, "delivery-tokens", false, "give each task its deliveryToken (shown with --json), for errand add --delivery-token")
	f.fields = fieldFlags{"count": {"count"}, "leaseSeconds": {"lease-seconds"}, "waitSeconds": {"wait"}}
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, _ []string) error {
		ts, err := cl.Lease(c.Context(), f.instance, f.queue, errandapi.LeaseRequest{Count: &count, LeaseSeconds: &leaseSeconds,
			WaitSeconds: wait, DeliveryTokens: tokens})
		if err != nil {
			return err
		}
		if f.json {
			if ts == nil {
				ts = []errandapi.LeasedTask{}
			}
			return printJSON(c.OutOrStdout(), errandapi.LeaseResponse{Tasks: ts})
		}
		if len(ts) == 0 {
			c.PrintErrf("no tasks leased: none of queue %s was due%s\n", f.queue, waited(wait))
			return nil
		}
		t := newTable(c.OutOrStdout(), "ID", "LEASE ID", "EXPIRES", "ATTEMPT", "NAME", "PAYLOAD")
		for _, k := range ts {
			t.row(k.ID, k.LeaseID, when(k.LeaseExpiresAt), k.Attempts, strPtr(k.Name), short(string(k.Payload), 60))
		}
		return t.flush()
	})
	return c
}

// waited says how long a lease waited for a task, when it did.
func waited(seconds int) string {
	if seconds == 0 {
		return ""
	}
	return " within " + itoa(seconds) + "s"
}
