package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/storeurl"
	"github.com/errandhq/errand/internal/task"
)

func newKeysCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:     "keys",
		Aliases: []string{"key"},
		Short:   "Make, list and revoke the API keys of errand serve",
		Long: `Make, list and revoke API keys directly in errand serve's store (not over the API), so
it works with serve stopped or running. A revoked key stops working at once on a SQLite
store; on PostgreSQL each node caches keys for up to a second, and revoke tells the running
nodes, which drop their copies when they hear it (milliseconds), so the key stops working on
every node within a second at the latest.
--store must name the store serve uses; a SQLite file that does not exist is refused (a
mistyped path would otherwise make a new, empty store) unless --create is given. The store
opened is named on stderr.`,
		Example: `  errand keys create --store sqlite:///var/lib/errand/errand.db --org acme --grant full:jobs --grant 'read:*'
  errand keys list --store sqlite:///var/lib/errand/errand.db
  errand keys revoke --store sqlite:///var/lib/errand/errand.db 01J9Z3K1V8M2Q4R6T8W0Y2A4C6`,
	}, newKeysCreateCmd(), newKeysListCmd(), newKeysRevokeCmd())
}

// keysFlags are the flags every keys subcommand has.
type keysFlags struct {
	store  string
	org    string
	create bool
}

func addKeysFlags(c *cobra.Command, orgUsage string) *keysFlags {
	k := &keysFlags{}
	c.Flags().StringVar(&k.store, "store", defaultStore, "the store serve uses: sqlite://PATH or postgres://…")
	c.Flags().StringVar(&k.org, "org", "", orgUsage)
	c.Flags().BoolVar(&k.create, "create", false, "create the SQLite store if it does not exist")
	return k
}

// open opens the store for a short command, and says which on stderr; its
// own logs go to stderr, warnings only.
func (k *keysFlags) open(c *cobra.Command) (store.Store, error) {
	log := slog.New(slog.NewTextHandler(c.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	return openDirect(c.Context(), k.store, k.create, log, c.ErrOrStderr(), c.CommandPath())
}

// openDirect opens the store of a command that works on it directly, not
// over the API (errand keys, errand restore). A SQLite file that does not
// exist is refused unless create is set: a mistyped --store would
// otherwise make a new, empty store and the command would report success
// on it. The store opened is named on stderr, after who (the command).
func openDirect(ctx context.Context, rawURL string, create bool, log *slog.Logger, stderr io.Writer, who string) (store.Store, error) {
	st, err := openStore(ctx, rawURL, storeOptions{Log: log, MustExist: !create})
	if errors.Is(err, storeurl.ErrNoStore) {
		return nil, fmt.Errorf("%w: give --store the store errand serve or errand dev uses (--create makes a new one)", err)
	}
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "%s: store: %s\n", who, storeurl.Describe(rawURL))
	return st, nil
}

func newKeysCreateCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "create --org ORG --grant ROLE:INSTANCE…",
		Short: "Make an API key; it is printed alone on stdout, once",
		Long: `Make an API key of an organization with one grant or more. ROLE is read (list and
get), write (add, run, cancel, retry, lease, ack) or full (queues, settings, purge, delete,
webhook key, creating the instance); INSTANCE is an instance's name or * for every
instance. The key is printed alone on stdout, this once: the store keeps only its digest.`,
		Example: `  KEY=$(errand keys create --store sqlite:///var/lib/errand/errand.db --org acme --grant full:jobs --grant 'read:*')`,
		Args:    noArgs,
	}
	kf := addKeysFlags(c, "the organization the key belongs to (required)")
	grants := c.Flags().StringArray("grant", nil, "ROLE:INSTANCE (repeatable): read, write or full on an instance name or *")
	c.RunE = func(c *cobra.Command, _ []string) error { return keysCreate(c, kf, *grants) }
	return c
}

func newKeysListCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "list",
		Short: "List API keys (never their secrets)",
		Long: `List the keys of an organization, or of every organization without --org: id,
organization, the key's first characters, grants, when made and when revoked. The secret
itself is never shown again. With --json, a JSON array of the same (times in epoch ms,
revokedAt null while valid).`,
		Example: `  errand keys list --store sqlite:///var/lib/errand/errand.db --org acme
  errand keys list --store sqlite:///var/lib/errand/errand.db --json`,
		Args: noArgs,
	}
	kf := addKeysFlags(c, "only this organization's keys")
	asJSON := c.Flags().Bool("json", false, "print a JSON array instead of a table")
	c.RunE = func(c *cobra.Command, _ []string) error { return keysList(c, kf, *asJSON) }
	return c
}

// listedKey is a key as keys list --json prints it.
type listedKey struct {
	ID        string            `json:"id"`
	Org       string            `json:"org"`
	Prefix    string            `json:"prefix"`
	Grants    []errandapi.Grant `json:"grants"`
	CreatedAt int64             `json:"createdAt"`
	RevokedAt *int64            `json:"revokedAt"`
}

func newKeysRevokeCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "revoke ID…",
		Short: "Revoke API keys by id; they stop working on every node",
		Long: `Revoke keys by their id (errand keys list shows them), even while serve runs; a key
stays listed as revoked. On SQLite it stops working at once. On PostgreSQL the running nodes
are told and drop their cached copy when they hear it (normally within milliseconds); a node
that misses the notification stops accepting the key when its copy expires, within a second.`,
		Example: `  errand keys revoke --store sqlite:///var/lib/errand/errand.db 01J9Z3K1V8M2Q4R6T8W0Y2A4C6`,
		Args:    minArgs("the key ids to revoke (errand keys list shows them)"),
	}
	kf := addKeysFlags(c, "the organization of the keys (default: each key's own)")
	c.RunE = func(c *cobra.Command, ids []string) error { return keysRevoke(c, kf, ids) }
	return c
}

func keysCreate(c *cobra.Command, kf *keysFlags, grantArgs []string) (err error) {
	var grants []store.Grant
	for _, a := range grantArgs {
		g, err := auth.ParseGrant(a)
		if err != nil {
			return usageErrorf("--grant: %w", cliError(err))
		}
		grants = append(grants, g)
	}
	if kf.org == "" {
		return usageErrorf("--org is required: the organization the key belongs to")
	}
	if len(grants) == 0 {
		return usageErrorf("at least one --grant ROLE:INSTANCE is required (for example --grant full:jobs or --grant 'read:*')")
	}
	secret, k, err := auth.NewKey(kf.org, grants, time.Now())
	if err != nil {
		return usageErrorf("%w", cliError(err))
	}
	st, err := kf.open(c)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); err == nil {
			err = cerr
		}
	}()
	if err := st.KeyCreate(c.Context(), k); err != nil {
		return err
	}
	c.PrintErrf("%s: made key %s of org %s (%s); it is shown once, below on stdout\n", c.CommandPath(), k.ID, k.Org, auth.FormatGrants(k.Grants))
	return printf(c, "%s\n", secret)
}

func keysList(c *cobra.Command, kf *keysFlags, asJSON bool) (err error) {
	st, err := kf.open(c)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); err == nil {
			err = cerr
		}
	}()
	ks, err := st.KeyList(c.Context(), kf.org)
	if err != nil {
		return err
	}
	if asJSON {
		out := make([]listedKey, 0, len(ks))
		for _, k := range ks {
			l := listedKey{ID: k.ID, Org: k.Org, Prefix: k.Prefix, Grants: make([]errandapi.Grant, 0, len(k.Grants)), CreatedAt: k.CreatedAt}
			for _, g := range k.Grants {
				l.Grants = append(l.Grants, errandapi.Grant{Instance: g.Instance, Role: errandapi.Role(g.Role)})
			}
			if k.Revoked() {
				l.RevokedAt = &k.RevokedAt
			}
			out = append(out, l)
		}
		return printJSON(c.OutOrStdout(), out)
	}
	t := newTable(c.OutOrStdout(), "ID", "ORG", "KEY", "GRANTS", "CREATED", "REVOKED")
	for _, k := range ks {
		revoked := "-"
		if k.Revoked() {
			revoked = fmtMs(k.RevokedAt)
		}
		t.row(k.ID, k.Org, k.Prefix+"…", auth.FormatGrants(k.Grants), fmtMs(k.CreatedAt), revoked)
	}
	return t.flush()
}

func keysRevoke(c *cobra.Command, kf *keysFlags, ids []string) (err error) {
	st, err := kf.open(c)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); err == nil {
			err = cerr
		}
	}()
	ctx := c.Context()
	orgOf := map[string]string{}
	if kf.org == "" {
		all, err := st.KeyList(ctx, "")
		if err != nil {
			return err
		}
		for _, k := range all {
			orgOf[k.ID] = k.Org
		}
	}
	now := time.Now().UnixMilli()
	revoked := 0
	// Nodes on a shared store cache keys: tell them, even when a later id
	// fails, so that they drop theirs now rather than within a second.
	defer func() {
		if revoked > 0 {
			notifyKeys(c, st)
		}
	}()
	for _, id := range ids {
		org := kf.org
		if org == "" {
			org = orgOf[id]
		}
		if err := st.KeyRevoke(ctx, store.KeyRef{Org: org, ID: id}, now); err != nil {
			if task.IsCode(err, task.CodeNotFound) {
				return fmt.Errorf("no key %s%s", id, inOrg(kf.org))
			}
			return err
		}
		revoked++
		if err := printf(c, "revoked %s\n", id); err != nil {
			return err
		}
	}
	return nil
}

// notifyKeys tells the nodes sharing st (PostgreSQL) that keys changed:
// each drops the keys it cached when it hears it. A failure is a warning:
// the revocation is stored, and every node sees it within the cache's
// lifetime (a second) anyway.
func notifyKeys(c *cobra.Command, st store.Store) {
	n, ok := st.(store.Notifier)
	if !ok {
		return // SQLite: one node, which reads every key from the store
	}
	if err := n.NotifyConfig(context.WithoutCancel(c.Context())); err != nil {
		c.PrintErrf("%s: telling the running nodes failed (%v); they stop accepting the key within a second\n", c.CommandPath(), err)
	}
}

func inOrg(org string) string {
	if org == "" {
		return ""
	}
	return " in org " + org
}

func fmtMs(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

// cliError turns a domain error into a message for the terminal: grant:
// "…" rather than its JSON-oriented form.
func cliError(err error) error {
	var te *task.Error
	if errors.As(err, &te) {
		return errors.New(strings.TrimSpace(te.Message))
	}
	return err
}
