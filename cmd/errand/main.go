// Command errand is the durable task queue: `errand dev` runs the emulator
// on embedded SQLite; `errand serve` runs production mode.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// command is one subcommand.
type command struct {
	name  string
	usage string
	run   func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = []command{
	{"dev", "run the emulator: embedded SQLite, no keys, instances created on first use", runDev},
	{"serve", "run production mode: API keys required, --store sqlite://PATH, outbound webhook address guard", runServe},
	{"keys", "make, list and revoke API keys: errand keys create|list|revoke --store URL …", runKeys},
	{"mcp", "serve MCP over stdio for an AI agent, against a server: --url (ERRAND_URL), --api-key (ERRAND_API_KEY)", runMCP},
	{"export", "write the organization's configuration bundle (instances, settings, queues) as JSON: errand export [--out FILE]", runExport},
	{"import", "load a configuration bundle into a node; reports what it created, changed and left: errand import FILE", runImport},
	{"restore", "recreate an instance from an instance backup: errand restore --store URL --org ORG --backup-key-file F ARCHIVE", runRestore},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Main runs one subcommand and returns the process's exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			if err := c.run(ctx, args[1:], stdout, stderr); err != nil {
				fmt.Fprintf(stderr, "errand %s: %v\n", c.name, err)
				return exitCode(err)
			}
			return 0
		}
	}
	fmt.Fprintf(stderr, "errand: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: errand <command> [flags]")
	fmt.Fprintln(w)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.usage)
	}
}
