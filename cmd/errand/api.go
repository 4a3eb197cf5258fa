package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/errandhq/errand/client"
)

// defaultURL is the node the API commands call without --url or ERRAND_URL:
// errand dev's address.
const defaultURL = "http://127.0.0.1:9191"

// apiFlags are the flags of every command that calls a node.
type apiFlags struct {
	url      string
	key      string
	json     bool
	instance string
	queue    string
}

// apiCmd adds the node's address, key and --json to c; withInstance adds
// --instance, withQueue --queue.
func apiCmd(c *cobra.Command, withInstance, withQueue bool) *apiFlags {
	f := &apiFlags{}
	fs := c.Flags()
	fs.StringVar(&f.url, "url", envOr("ERRAND_URL", defaultURL), "the node's base URL (env ERRAND_URL)")
	fs.StringVar(&f.key, "api-key", "", "the API key; errand serve needs one, errand dev none (env ERRAND_API_KEY)")
	fs.BoolVar(&f.json, "json", false, "print JSON for scripts instead of a table")
	if withInstance {
		fs.StringVarP(&f.instance, "instance", "i", os.Getenv("ERRAND_INSTANCE"), "the instance (env ERRAND_INSTANCE)")
	}
	if withQueue {
		fs.StringVarP(&f.queue, "queue", "q", "", "the queue")
	}
	return f
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// client checks the flags every call needs and returns a client of the
// node. The key comes from --api-key, else ERRAND_API_KEY (never shown in
// --help's defaults).
func (f *apiFlags) client(c *cobra.Command) (*client.Client, error) {
	if fl := c.Flags().Lookup("instance"); fl != nil && f.instance == "" {
		return nil, usageErrorf("--instance (or ERRAND_INSTANCE) is required: the instance to act in")
	}
	if fl := c.Flags().Lookup("queue"); fl != nil && f.queue == "" {
		return nil, usageErrorf("--queue is required: the queue to act on")
	}
	key := f.key
	if key == "" {
		key = os.Getenv("ERRAND_API_KEY")
	}
	cl, err := client.New(f.url, client.Options{APIKey: key, UserAgent: "errand-cli/" + versionString()})
	if err != nil {
		return nil, usageErrorf("--url: %v", err)
	}
	return cl, nil
}

// reach explains a call that got no answer: the node is not there.
func (f *apiFlags) reach(err error) error {
	if client.IsConnectionError(err) {
		return fmt.Errorf("no errand answers at %s (start one with errand dev, or set --url / ERRAND_URL): %w", f.url, errors.Unwrap(err))
	}
	return err
}

// printJSON writes v as JSON: indented on a terminal, on one line for a
// pipe or a file (what scripts read).
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	if isTerminal(w) {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

// table is a tab-aligned table on w.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...any) *table {
	t := &table{tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(t.tw, "\t")
		}
		fmt.Fprint(t.tw, c)
	}
	fmt.Fprintln(t.tw)
}

func (t *table) flush() error { return t.tw.Flush() }

// when formats epoch milliseconds for a table; 0 or nil is "-".
func when(ms int64) string {
	if ms == 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}

func whenPtr(ms *int64) string {
	if ms == nil {
		return "-"
	}
	return when(*ms)
}

func strPtr(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

// run makes the RunE of an API command: the client is checked and made
// first, and a node that does not answer is explained.
func (f *apiFlags) run(fn func(c *cobra.Command, cl *client.Client, args []string) error) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		cl, err := f.client(c)
		if err != nil {
			return err
		}
		return f.reach(fn(c, cl, args))
	}
}

// confirmFlag adds --yes, the confirmation a destructive command needs.
func confirmFlag(c *cobra.Command) *bool {
	return c.Flags().Bool("yes", false, "confirm: without it nothing is deleted")
}

// needYes is the usage error of a destructive command run without --yes.
func needYes(what string) error {
	return usageErrorf("%s cannot be undone: add --yes to confirm", what)
}

// printf writes to the command's stdout.
func printf(c *cobra.Command, format string, a ...any) error {
	_, err := fmt.Fprintf(c.OutOrStdout(), format, a...)
	return err
}

// compactJSON writes v as JSON on one line.
func compactJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}
