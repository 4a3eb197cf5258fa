package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

const keysUsage = `usage:
  errand keys create --store URL --org ORG --grant ROLE:INSTANCE [--grant …]
      make a key; it is printed alone on stdout, once (ROLE: read, write or full;
      INSTANCE: a name or * for every instance)
  errand keys list   --store URL [--org ORG]
      list keys (never their secrets); without --org, every organization's
  errand keys revoke --store URL [--org ORG] ID…
      revoke keys by id: they stop working at once, on every node`

func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, keysUsage)
		return errors.New("a subcommand is needed: create, list or revoke")
	}
	switch args[0] {
	case "create":
		return keysCreate(ctx, args[1:], stdout, stderr)
	case "list":
		return keysList(ctx, args[1:], stdout, stderr)
	case "revoke":
		return keysRevoke(ctx, args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprintln(stderr, keysUsage)
		return nil
	}
	fmt.Fprintln(stderr, keysUsage)
	return fmt.Errorf("unknown subcommand %q", args[0])
}

// keysFlags are the flags every keys subcommand has.
type keysFlags struct {
	fs    *flag.FlagSet
	store *string
	org   *string
}

func newKeysFlags(name string, stderr io.Writer) *keysFlags {
	fs := flag.NewFlagSet("keys "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return &keysFlags{
		fs:    fs,
		store: fs.String("store", defaultStore, "the store: sqlite://PATH"),
		org:   fs.String("org", "", "the organization"),
	}
}

// parse parses flags and positional arguments in any order.
func (k *keysFlags) parse(args []string) ([]string, error) { return parseInterleaved(k.fs, args) }

// open opens the store for a short command: its own logs go to stderr,
// warnings only.
func (k *keysFlags) open(ctx context.Context, stderr io.Writer) (store.Store, error) {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return openStore(ctx, *k.store, storeOptions{Log: log})
}

func keysCreate(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	kf := newKeysFlags("create", stderr)
	var grants []store.Grant
	kf.fs.Func("grant", "ROLE:INSTANCE (repeatable): read, write or full on an instance name or *", func(s string) error {
		g, err := auth.ParseGrant(s)
		if err != nil {
			return cliError(err)
		}
		grants = append(grants, g)
		return nil
	})
	pos, err := kf.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("unexpected argument %q", pos[0])
	}
	if *kf.org == "" {
		return errors.New("--org is required: the organization the key belongs to")
	}
	if len(grants) == 0 {
		return errors.New("at least one --grant ROLE:INSTANCE is required (for example --grant full:jobs or --grant read:*)")
	}
	secret, k, err := auth.NewKey(*kf.org, grants, time.Now())
	if err != nil {
		return cliError(err)
	}
	st, err := kf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); err == nil {
			err = cerr
		}
	}()
	if err := st.KeyCreate(ctx, k); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "errand: made key %s of org %s (%s); it is shown once, below on stdout\n", k.ID, k.Org, auth.FormatGrants(k.Grants))
	_, err = fmt.Fprintln(stdout, secret)
	return err
}

func keysList(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	kf := newKeysFlags("list", stderr)
	pos, err := kf.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("unexpected argument %q", pos[0])
	}
	st, err := kf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); err == nil {
			err = cerr
		}
	}()
	ks, err := st.KeyList(ctx, *kf.org)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tORG\tKEY\tGRANTS\tCREATED\tREVOKED")
	for _, k := range ks {
		revoked := "-"
		if k.RevokedAt != 0 {
			revoked = fmtMs(k.RevokedAt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s…\t%s\t%s\t%s\n", k.ID, k.Org, k.Prefix, auth.FormatGrants(k.Grants), fmtMs(k.CreatedAt), revoked)
	}
	return tw.Flush()
}

func keysRevoke(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	kf := newKeysFlags("revoke", stderr)
	ids, err := kf.parse(args)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return errors.New("name the key ids to revoke (errand keys list shows them)")
	}
	st, err := kf.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); err == nil {
			err = cerr
		}
	}()
	orgOf := map[string]string{}
	if *kf.org == "" {
		all, err := st.KeyList(ctx, "")
		if err != nil {
			return err
		}
		for _, k := range all {
			orgOf[k.ID] = k.Org
		}
	}
	now := time.Now().UnixMilli()
	for _, id := range ids {
		org := *kf.org
		if org == "" {
			org = orgOf[id]
		}
		if err := st.KeyRevoke(ctx, store.KeyRef{Org: org, ID: id}, now); err != nil {
			if task.IsCode(err, task.CodeNotFound) {
				return fmt.Errorf("no key %s%s", id, inOrg(*kf.org))
			}
			return err
		}
		fmt.Fprintf(stdout, "revoked %s\n", id)
	}
	return nil
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
