package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

const restoreUsage = `usage:
  errand restore --store URL --org ORG --backup-key-file FILE [--into NAME] [--create] [--json] ARCHIVE

Recreate an instance from an instance backup (the archive that
POST /api/instances/{instance}/backup wrote): its settings, its queues, its
trigger rules (hook URLs and secrets included) and every task, with the ids,
states, attempts and payloads it had. It runs against the store directly, as
errand keys does; nodes serving the store see the instance at once and run its
due tasks. A hook whose token another instance of the store holds (restoring
beside the original) gets a new token.

The archive is read a chunk at a time, twice; the first pass checks it whole
before anything is written: a wrong key, a truncated or a damaged archive, or an
instance that exists already is refused and nothing changes. A restore that fails part-way removes what it made.
A SQLite --store that does not exist is refused (a mistyped path would
otherwise restore into a new, empty store no node serves) unless --create is
given, to restore into a new store (a fresh host). The store opened is named
on stderr.

flags:
  --store URL             the store: sqlite://PATH or postgres://… (default sqlite://errand.db)
  --org ORG               the organization to restore into (errand dev's is "dev")
  --backup-key-file FILE  the key the archive was made with (64 hex digits, base64, or 32 raw bytes)
  --into NAME             the new instance's name (default: the archived instance's); it must not exist
  --create                create the SQLite store if it does not exist
  --json                  print the result as JSON on stdout

exit codes: 0 restored, 1 refused or failed (nothing restored), 2 bad command line

examples:
  errand restore --store sqlite://.errand/errand.db --org dev \
      --backup-key-file .errand/backup.key .errand/backups/jobs-01k3250r00c577i4opr71.errand-backup
  errand restore --store postgres://errand@db/errand --org acme \
      --backup-key-file /etc/errand/backup.key --into jobs-copy /var/lib/errand/backups/jobs-….errand-backup`

// restoreResult is what errand restore prints with --json.
type restoreResult struct {
	Org      string `json:"org"`
	Instance string `json:"instance"`
	Archive  string `json:"archive"`
	Bytes    int    `json:"bytes"`
	Queues   int    `json:"queues"`
	Triggers int    `json:"triggers"`
	Tasks    int    `json:"tasks"`
	// HooksRenewed counts hook rules restored with a new URL token, since
	// the archived one is in use in the store (the archived instance).
	HooksRenewed int `json:"hooksRenewed,omitempty"`
}

func runRestore(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	storeURL := fs.String("store", defaultStore, "")
	org := fs.String("org", "", "")
	keyFile := fs.String("backup-key-file", "", "")
	into := fs.String("into", "", "")
	create := fs.Bool("create", false, "")
	asJSON := fs.Bool("json", false, "")
	pos, help, err := parseVerb(fs, args, restoreUsage, stdout)
	switch {
	case help || err != nil:
		return err
	case len(pos) != 1:
		return usagef("name one archive to restore (got %d arguments)\n\n%s", len(pos), restoreUsage)
	case *org == "":
		return usagef("--org is required: the organization to restore into (errand dev's is \"dev\")")
	case *keyFile == "":
		return usagef("--backup-key-file is required: the key the archive was made with")
	}
	raw, err := os.ReadFile(*keyFile)
	if err != nil {
		return fmt.Errorf("--backup-key-file: %w", err)
	}
	key, err := parseBackupKey(raw)
	if err != nil {
		return fmt.Errorf("--backup-key-file %s: %w", *keyFile, err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := openDirect(ctx, *storeURL, *create, log, stderr, "errand restore")
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); err == nil {
			err = cerr
		}
	}()
	// The archive's targets were accepted by the node that made it; they are
	// restored as they were (a serve node still applies its webhook address
	// guard when it delivers).
	eng := engine.New(engine.Config{Store: st, Logger: log, URLRules: task.URLRules{AllowHTTP: true}})
	defer eng.Stop()
	res, err := eng.RestoreInstance(ctx, *org, *into, pos[0], key)
	if err != nil {
		return cliError(err)
	}
	out := restoreResult{Org: *org, Instance: res.Instance, Archive: pos[0], Bytes: res.Bytes, Queues: res.Queues, Triggers: res.Triggers,
		Tasks: res.Tasks, HooksRenewed: res.HooksRenewed}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	_, err = fmt.Fprintf(stdout, "restored instance %s of org %s: %d queues, %d triggers, %d tasks (%d bytes from %s)\n",
		out.Instance, out.Org, out.Queues, out.Triggers, out.Tasks, out.Bytes, out.Archive)
	if err == nil && out.HooksRenewed > 0 {
		_, err = fmt.Fprintf(stderr, "errand: %d hook rules got a new URL token: their archived token is in use in this store (list the rules for their new hook.path)\n", out.HooksRenewed)
	}
	return err
}

// parseInterleaved parses flags and positional arguments in any order.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
