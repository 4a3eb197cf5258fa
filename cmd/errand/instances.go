package main

import (
	"github.com/spf13/cobra"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

func newInstancesCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:     "instances",
		Aliases: []string{"instance"},
		Short:   "List, create and delete instances",
		Long: `An instance is a named namespace of queues; every instance has a queue "default".
errand dev creates an instance on its first use; errand serve needs it created (with a key
that has the full grant on its name).`,
		Example: `  errand instances list
  errand instances create jobs
  errand instances delete jobs --yes`,
	}, newInstancesListCmd(), newInstancesCreateCmd(), newInstancesDeleteCmd())
}

func newInstancesListCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "list",
		Short: "List the instances the key has a grant on",
		Long: `List the instances the key has a grant on (any role), with when each was
created. With --json: {"instances": [{"name", "createdAt"}]}.`,
		Example: `  errand instances list
  ERRAND_URL=https://errand.example.com ERRAND_API_KEY=errk_… errand instances list --json`,
		Args: noArgs,
	}
	f := apiCmd(c, false, false)
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, _ []string) error {
		is, err := cl.ListInstances(c.Context())
		if err != nil {
			return err
		}
		if f.json {
			return printJSON(c.OutOrStdout(), map[string]any{"instances": is})
		}
		if len(is) == 0 {
			c.PrintErrln("no instances the key can see (errand instances create NAME makes one)")
			return nil
		}
		t := newTable(c.OutOrStdout(), "NAME", "CREATED")
		for _, i := range is {
			t.row(i.Name, when(i.CreatedAt))
		}
		return t.flush()
	})
	return c
}

func newInstancesCreateCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "create NAME",
		Short: "Create an instance",
		Long: `Create an instance with its queue "default". A name that is taken is refused
with INSTANCE_EXISTS (exit code 1). With --json: {"instance": {...}} as the API answers.`,
		Example: `  errand instances create jobs`,
		Args:    exactArgs("NAME"),
	}
	f := apiCmd(c, false, false)
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, args []string) error {
		in, err := cl.CreateInstance(c.Context(), args[0])
		if err != nil {
			return err
		}
		if f.json {
			return printJSON(c.OutOrStdout(), errandapi.InstanceResponse{Instance: *in})
		}
		return printf(c, "created instance %s\n", in.Name)
	})
	return c
}

func newInstancesDeleteCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "delete NAME --yes",
		Short: "Delete an instance with every queue and task in it",
		Long: `Delete an instance with every queue and task in it. It cannot be undone, so
--yes is required. With --json: {"pending": false} as the API answers (the instance is
gone when it answers).`,
		Example: `  errand instances delete jobs --yes`,
		Args:    exactArgs("NAME"),
	}
	yes := confirmFlag(c)
	f := apiCmd(c, false, false)
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, args []string) error {
		if !*yes {
			return needYes("deleting instance " + args[0] + " and all its queues and tasks")
		}
		if err := cl.DeleteInstance(c.Context(), args[0]); err != nil {
			return err
		}
		if f.json {
			// The API answers {"pending": false}: the delete is done when
			// it answers (the SDK's DeleteInstance keeps no more).
			return printJSON(c.OutOrStdout(), errandapi.InstanceDeleteResponse{})
		}
		return printf(c, "deleted instance %s\n", args[0])
	})
	return c
}
