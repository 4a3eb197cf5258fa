package main

import (
	"github.com/spf13/cobra"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

// newReleaseCmd is errand release: a leased task given back, unharmed or
// as a failed attempt.
func newReleaseCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "release ID --lease LEASE_ID",
		Short: "Give a leased task back, unharmed or as a failed attempt",
		Long: `Give back a task leased with errand lease. Without --error it goes back unharmed: due
again after --delay seconds (at once without it), the attempt not counted. With --error
it is a failed attempt, the message kept as its last error: retried after --delay seconds,
or the queue's backoff when --delay is 0 or unset, and failed for good (dead-lettered
when the queue says so) once its attempts are spent. A lease that expired or ended is
refused with LEASE_LOST and the task is not changed. With --json: {"task": {...}} as the
API answers.`,
		Example: `  errand release -i jobs 01J9Z3K1V8M2Q4R6T8W0Y2A4C6 --lease 3f9c… --delay 300
  errand release -i jobs 01J9Z3K1V8M2Q4R6T8W0Y2A4C6 --lease 3f9c… --error "smtp: 451 try later"`,
		Args: exactArgs("ID"),
	}
	f := apiCmd(c, true, false)
	var lease, msg string
	var delay seconds
	c.Flags().StringVar(&lease, "lease", "", "the lease id the lease gave (required)")
	c.Flags().StringVar(&msg, "error", "", "why the attempt failed: makes the release a failed attempt")
	c.Flags().Var(&delay, "delay", "seconds before the task is due again, 0–86400 (fractions allowed), or a duration: 90s, 5m, 24h")
	f.fields = fieldFlags{"leaseId": {"lease"}, "error": {"error"}, "delaySeconds": {"delay"}}
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, args []string) error {
		if lease == "" {
			return usageErrorf("--lease is required: the lease id errand lease printed")
		}
		if c.Flags().Changed("error") && msg == "" {
			return usageErrorf("--error is empty: say why the attempt failed, or leave --error out to give the task back unharmed")
		}
		t, err := cl.Release(c.Context(), f.instance, args[0], errandapi.ReleaseRequest{LeaseID: lease, Error: msg, DelaySeconds: float64(delay)})
		return f.answerTask(c, t, err, func() string { return ", due " + when(t.RunAt) })
	})
	return c
}

// newExtendCmd is errand extend: a held lease made longer (or shorter).
func newExtendCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "extend ID --lease LEASE_ID",
		Short: "Make a held lease last longer",
		Long: `Make the lease errand lease gave last --lease-seconds from now (longer or shorter than
it had left), for work that takes longer than the lease. A lease that expired or ended is
refused with LEASE_LOST. With --json: {"task": {...}} as the API answers.`,
		Example: `  errand extend -i jobs 01J9Z3K1V8M2Q4R6T8W0Y2A4C6 --lease 3f9c… --lease-seconds 600`,
		Args:    exactArgs("ID"),
	}
	f := apiCmd(c, true, false)
	var lease string
	var seconds int
	c.Flags().StringVar(&lease, "lease", "", "the lease id the lease gave (required)")
	c.Flags().IntVar(&seconds, "lease-seconds", 60, "how long the lease lasts from now, 1–86400")
	f.fields = fieldFlags{"leaseId": {"lease"}, "leaseSeconds": {"lease-seconds"}}
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, args []string) error {
		if lease == "" {
			return usageErrorf("--lease is required: the lease id errand lease printed")
		}
		t, err := cl.Extend(c.Context(), f.instance, args[0], errandapi.ExtendRequest{LeaseID: lease, LeaseSeconds: &seconds})
		return f.answerTask(c, t, err, func() string { return ", lease expires " + whenPtr(t.LeaseExpiresAt) })
	})
	return c
}
