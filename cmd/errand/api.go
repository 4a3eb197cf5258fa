package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
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
	// withQueue: the command takes --queue as the queue it acts on (a
	// command may have a --queue of its own meaning: triggers').
	withQueue bool
	// fields names the flags that set the API's fields (see fieldFlags).
	fields fieldFlags
}

// apiCmd adds the node's address, key and --json to c; withInstance adds
// --instance, withQueue --queue.
func apiCmd(c *cobra.Command, withInstance, withQueue bool) *apiFlags {
	f := &apiFlags{withQueue: withQueue}
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
	if f.withQueue && f.queue == "" {
		return nil, usageErrorf("--queue is required: the queue to act on")
	}
	key := f.key
	if key == "" {
		key = os.Getenv("ERRAND_API_KEY")
	}
	cl, err := client.New(f.url, client.Options{APIKey: key, UserAgent: "errand-cli/" + versionString()})
	if err != nil {
		return nil, usageErrorf("%s: %v", clientFlag(err), err)
	}
	return cl, nil
}

// clientFlag names the flag a refusal of client.New is about: the key's
// when the key is refused (a newline pasted with it: a coded error), else
// --url's (the URL is checked first).
func clientFlag(err error) string {
	var e *errandapi.Error
	if errors.As(err, &e) {
		return "--api-key (or ERRAND_API_KEY)"
	}
	return "--url"
}

// reach explains a call that got no answer: the node is not there.
func (f *apiFlags) reach(err error) error { return reach(f.url, err) }

// reach explains a call to the node at url that got no answer: the node is
// not there. An error that wraps the call's (an import's step) keeps its
// own words around the explanation. Any other error is returned as it is.
func reach(url string, err error) error {
	if !client.IsConnectionError(err) {
		return err
	}
	// The innermost connection error is the client's own "client: METHOD
	// URL: cause"; the explanation takes its place and keeps the cause.
	te := err
	for next := errors.Unwrap(te); next != nil && client.IsConnectionError(next); next = errors.Unwrap(te) {
		te = next
	}
	say := fmt.Sprintf("no errand answers at %s (start one with errand dev, or set --url / ERRAND_URL): %v", url, errors.Unwrap(te))
	if te != err {
		say = strings.Replace(err.Error(), te.Error(), say, 1)
	}
	return &unreachable{msg: say, err: err}
}

// unreachable is a call that got no answer, explained for a person; it
// wraps the client's error.
type unreachable struct {
	msg string
	err error
}

func (e *unreachable) Error() string { return e.msg }
func (e *unreachable) Unwrap() error { return e.err }

// apiKeyHint is what the CLI tells a person whose call had no valid API
// key: the node's own words name the HTTP header, which the CLI sets.
const apiKeyHint = "pass --api-key KEY or set ERRAND_API_KEY (errand keys create makes a key)"

// cliRefusal rewords a refusal of the API for the command line: an
// UNAUTHENTICATED answer names --api-key and ERRAND_API_KEY instead of the
// HTTP header.
func cliRefusal(ae *errandapi.Error) string {
	msg := ae.Message
	if ae.Code != errandapi.CodeUnauthenticated {
		return msg
	}
	const header = "send the header Authorization: Bearer KEY"
	if strings.Contains(msg, header) {
		return strings.Replace(msg, header, apiKeyHint, 1)
	}
	return msg + ": " + apiKeyHint
}

// fieldFlags maps the API's field names to the flags of a command that set
// them, so that an INVALID_ARGUMENT the node answers names the flag the
// user typed (--wait, not waitSeconds). A field with several flags (target:
// --webhook, --function, --channel) names the one given. The node still
// does all the checking; only the name in front of its message changes.
type fieldFlags map[string][]string

// targetFields are the fields of a target, set by --webhook, --function
// and --channel.
var targetFields = fieldFlags{
	"target": {"webhook", "function", "channel"}, "target.webhook": {"webhook"},
	"target.function": {"function"}, "target.channel": {"channel"}, "target.headers": {"header"},
}

// with is m and every field of more.
func (m fieldFlags) with(more fieldFlags) fieldFlags {
	out := fieldFlags{}
	for _, src := range []fieldFlags{m, more} {
		for k, v := range src {
			out[k] = v
		}
	}
	return out
}

// fieldPrefix reads the field in front of an INVALID_ARGUMENT message: an
// add's one task is tasks[0]; an item of a list field (hook.headers[1])
// is the list's flag, whose value the message quotes; a header the call
// sent (X-Errand-Delivery) is a field too.
var fieldPrefix = regexp.MustCompile(`^(?:tasks\[\d+\]\.)?([A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z][A-Za-z0-9]*)*)(?:\[\d+\])?: `)

// flagged rewrites an INVALID_ARGUMENT whose field a flag of c sets so that
// it names the flag; any other error is returned as it is.
func (m fieldFlags) flagged(c *cobra.Command, err error) error {
	var ae *errandapi.Error
	if len(m) == 0 || !errors.As(err, &ae) || ae.Code != errandapi.CodeInvalidArgument {
		return err
	}
	sm := fieldPrefix.FindStringSubmatchIndex(ae.Message)
	if sm == nil {
		return err
	}
	name := m.flagOf(c, ae.Message[sm[2]:sm[3]])
	if name == "" {
		return err
	}
	cp := *ae
	// A setting the API clears with null, a flag clears with "none".
	cp.Message = "--" + name + strings.ReplaceAll(ae.Message[sm[1]-len(": "):], "or null", `or "none"`)
	return &cp
}

// flagOf is the flag that sets field (or the field it is part of), the one
// given when several may: "" when none does.
func (m fieldFlags) flagOf(c *cobra.Command, field string) string {
	for f := field; f != ""; {
		if names := m[f]; len(names) > 0 {
			for _, n := range names {
				if c.Flags().Changed(n) {
					return n
				}
			}
			return names[0]
		}
		i := strings.LastIndexByte(f, '.')
		if i < 0 {
			break
		}
		f = f[:i]
	}
	return ""
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
		return f.reach(f.fields.flagged(c, fn(c, cl, args)))
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
