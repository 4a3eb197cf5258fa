package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

func newFunctionsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "functions",
		Short: "List the functions connected workers serve, and those queues target",
		Long: `List an instance's functions: each one a connected worker (or an embedded program)
serves now, with SLOTS the attempts it runs at once summed over every node, and each one
a queue of the instance targets, with those QUEUES. SLOTS 0 means no worker serves it:
its tasks wait, no attempt used, until one connects. With --json: {"functions": [...]}
as GET /v1/tasks/{instance}/functions answers.`,
		Example: `  errand functions --instance jobs
  errand functions -i jobs --json | jq '.functions[] | select(.slots == 0)'`,
		Args: noArgs,
	}
	f := apiCmd(c, true, false)
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, _ []string) error {
		fs, err := cl.Functions(c.Context(), f.instance)
		if err != nil {
			return err
		}
		if f.json {
			return printJSON(c.OutOrStdout(), errandapi.FunctionList{Functions: fs})
		}
		t := newTable(c.OutOrStdout(), "FUNCTION", "SLOTS", "QUEUES")
		for _, fn := range fs {
			queues := strings.Join(fn.Queues, ",")
			if queues == "" {
				queues = "-"
			}
			t.row(fn.Function, fn.Slots, queues)
		}
		return t.flush()
	})
	return c
}
