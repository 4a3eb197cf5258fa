package main

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

func newAckCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "ack ID --lease LEASE_ID",
		Short: "Finish a leased task with its result",
		Long: `Finish a task leased with errand lease: it succeeds, with --result (any JSON) kept
as its result. The lease id is the one the lease gave; a lease that expired or ended is
refused with LEASE_LOST and the task is not changed. With --json: {"task": {...}} as the
API answers.`,
		Example: `  errand ack -i jobs 01J9Z3K1V8M2Q4R6T8W0Y2A4C6 --lease 3f9c… --result '{"sent":true}'`,
		Args:    exactArgs("ID"),
	}
	f := apiCmd(c, true, false)
	var lease, result string
	c.Flags().StringVar(&lease, "lease", "", "the lease id the lease gave (required)")
	c.Flags().StringVar(&result, "result", "", "the task's result, any JSON")
	f.fields = fieldFlags{"leaseId": {"lease"}, "result": {"result"}}
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, args []string) error {
		if lease == "" {
			return usageErrorf("--lease is required: the lease id errand lease printed")
		}
		req := errandapi.AckRequest{LeaseID: lease}
		if result != "" {
			if !json.Valid([]byte(result)) {
				return usageErrorf("--result is not JSON: %s", short(result, 40))
			}
			req.Result = json.RawMessage(result)
		}
		t, err := cl.Ack(c.Context(), f.instance, args[0], req)
		return f.answerTask(c, t, err, func() string { return "" })
	})
	return c
}

// answerTask prints the task a call on one leased task answered: with
// --json the API's answer, else its id and state and what more says; or
// it returns the call's error.
func (f *apiFlags) answerTask(c *cobra.Command, t *errandapi.Task, err error, more func() string) error {
	if err != nil {
		return err
	}
	if f.json {
		return printJSON(c.OutOrStdout(), errandapi.TaskResponse{Task: t})
	}
	return printf(c, "%s %s%s\n", t.ID, t.State, more())
}
