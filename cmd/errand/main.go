// Command errand is the durable task queue: `errand dev` runs the emulator
// on embedded SQLite, `errand serve` runs production mode, and the other
// commands (`errand queues`, `errand add`, `errand list`, …) drive a
// running node over its v1 API through the Go SDK (package client).
//
// The commands are built with cobra: about thirty commands and
// subcommands each need a description, examples, flags given before or
// after their arguments, hidden internal flags and `--help` that exits 0,
// which the standard flag package would have us write by hand for each.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/errandhq/errand/errandapi"
)

// Exit codes of every command.
const (
	exitOK      = 0 // done
	exitRefused = 1 // refused by the API (its code on stderr), or failed
	exitUsage   = 2 // the command line is wrong
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tuneGC() // the process's, for as long as it runs: not Main's, which tests run in process
	os.Exit(Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Main runs one command line and returns the process's exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	if cmd == nil {
		cmd = root
	}
	var ue usageError
	var ae *errandapi.Error
	var qe *quietError
	switch {
	case errors.As(err, &qe):
		return exitRefused
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", cmd.CommandPath(), ue.err, cmd.CommandPath())
		return exitUsage
	case errors.As(err, &ae):
		msg := cliRefusal(ae)
		if ae.ID != "" {
			msg += " (id " + ae.ID + ")"
		}
		fmt.Fprintf(stderr, "%s: %s: %s\n", cmd.CommandPath(), ae.Code, msg)
		return exitRefused
	default:
		fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
		return exitRefused
	}
}

// newRoot builds the command tree writing to stdout and stderr.
func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "errand",
		Short: "errand, the durable task queue",
		Long: `errand is a durable task queue service. "errand dev" runs the emulator on
embedded SQLite with no set-up; "errand serve" runs production mode with API keys.
The other commands drive a running node over its v1 API: they read its address from
--url or ERRAND_URL (default ` + defaultURL + `) and its key from --api-key or
ERRAND_API_KEY. They print tables for people and, with --json, JSON for scripts.
Exit codes: 0 done, 1 refused by the API (its code on stderr) or failed, 2 usage.`,
		Example: `  errand dev                                   # the emulator on http://127.0.0.1:9191
  errand queues create emails --instance jobs --mode pull
  errand add --instance jobs --queue emails --payload '{"to":"a@example.com"}'
  errand list --instance jobs --queue emails --state scheduled --json`,
		Version:       versionString(),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			c.PrintErr(c.UsageString())
			return usageErrorf("a command is needed")
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.CompletionOptions.HiddenDefaultCmd = true
	root.AddGroup(&cobra.Group{ID: "node", Title: "Run a node:"}, &cobra.Group{ID: "api", Title: "Drive a running node:"})
	for _, c := range []*cobra.Command{newDevCmd(), newServeCmd(), newKeysCmd(), newMCPCmd(),
		legacy("restore", "Recreate an instance from an instance backup (errand restore --help)", runRestore)} {
		c.GroupID = "node"
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{
		newInstancesCmd(), newQueuesCmd(), newTriggersCmd(), newAddCmd(), newListCmd(), newGetCmd(),
		newTaskOpCmd(taskRun), newTaskOpCmd(taskCancel), newTaskOpCmd(taskRetry), newTaskOpCmd(taskDelete), newPrioritizeCmd(), newRescheduleCmd(),
		newLeaseCmd(), newAckCmd(), newReleaseCmd(), newExtendCmd(), newUsageCmd(), newFunctionsCmd(),
		legacy("export", "Write the organization's configuration bundle as JSON (errand export --help)", runExport),
		legacy("import", "Load a configuration bundle into a node (errand import --help)", runImport),
	} {
		c.GroupID = "api"
		root.AddCommand(c)
	}
	root.AddCommand(newVersionCmd())
	root.SetHelpCommand(newHelpCmd())
	return root
}

// newHelpCmd is cobra's help command but for a topic it does not know:
// that is a usage error (exit 2, naming it), not the root's help and 0.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		// As cobra's own: completes the names of the commands under the
		// ones typed.
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			cmd, _, err := c.Root().Find(args)
			if err != nil || cmd == nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []string
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, sub.Name()+"\t"+sub.Short)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			root := c.Root()
			cmd, rest, err := root.Find(args)
			if err != nil || cmd == nil || len(rest) > 0 || (cmd == root && len(args) > 0) {
				return usageErrorf("no help topic %q: \"errand help\" lists the commands", strings.Join(args, " "))
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
	}
}

// quietError is a failure the command has already reported: exit code 1
// and nothing more on stderr.
type quietError struct{ err error }

func (e *quietError) Error() string { return e.err.Error() }
func (e *quietError) Unwrap() error { return e.err }

// usageErrorf is a usageError (exitcode.go): exit code 2.
func usageErrorf(format string, a ...any) error { return usagef(format, a...) }

// noArgs refuses any positional argument (an unknown subcommand included).
func noArgs(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if c.HasSubCommands() {
		return usageErrorf("unknown command %q", args[0])
	}
	return usageErrorf("unexpected argument %q", args[0])
}

// exactArgs wants exactly the named positional arguments.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < len(names) {
			return usageErrorf("missing %s", names[len(args)])
		}
		if len(args) > len(names) {
			return usageErrorf("unexpected argument %q", args[len(names)])
		}
		return nil
	}
}

// minArgs wants at least one positional argument, named name.
func minArgs(name string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usageErrorf("missing %s", name)
		}
		return nil
	}
}

// group makes a command whose work is done by its subcommands: alone it
// shows its help and is a usage error; an unknown subcommand is one too.
func group(c *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	c.Args = noArgs
	c.RunE = func(c *cobra.Command, args []string) error {
		c.PrintErr(c.UsageString())
		return usageErrorf("a subcommand is needed")
	}
	c.AddCommand(subs...)
	return c
}

// hide hides internal flags from --help (they still work).
func hide(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		if err := fs.MarkHidden(n); err != nil {
			panic(err)
		}
	}
}

// legacy wraps a command that parses its own flags and prints its own
// usage (export, import, restore: --help there prints it and exits 0).
func legacy(name, short string, run func(context.Context, []string, io.Writer, io.Writer) error) *cobra.Command {
	return &cobra.Command{
		Use: name, Short: short, DisableFlagParsing: true,
		Long:    short + ". It parses its own flags: " + name + " --help lists them with examples.",
		Example: "  errand " + name + " --help",
		RunE: func(c *cobra.Command, args []string) error {
			return run(c.Context(), args, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
}
