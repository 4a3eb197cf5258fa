package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/engine"
)

const exportUsage = `usage:
  errand export [--url URL] [--api-key KEY] [--out FILE] [--idempotency-key K] [--json]

Write the organization's configuration bundle — its instances, their settings
and their queues with every setting — as JSON, for errand import on another
host. It never holds API keys, webhook signing keys or tasks, so it is safe to
keep in a repository. The export runs on the node as a backup.export job
(POST /api/backup/export); this command waits for it, showing its state on a
terminal. The key needs the full grant on every instance (full:*).

flags:
` + remoteFlagsHelp + `
  --out FILE              write the bundle to FILE (atomically) instead of stdout
  --idempotency-key K     the job's key: running the command again with the same K
                          answers the first job's bundle instead of a new export
  --json                  with --out, print a JSON summary on stdout

exit codes: 0 written, 1 refused or the job failed, 2 bad command line

examples:
  errand export > errand-config.json
  errand export --url https://errand.example.com --api-key "$KEY" --out errand-config.json`

// exportSummary is what errand export --out FILE --json prints.
type exportSummary struct {
	Path      string `json:"path"`
	Job       string `json:"job"`
	Instances int    `json:"instances"`
	Queues    int    `json:"queues"`
	Bytes     int    `json:"bytes"`
}

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rf := addRemoteFlags(fs)
	out := fs.String("out", "", "")
	key := fs.String("idempotency-key", "", "")
	asJSON := fs.Bool("json", false, "")
	pos, help, err := parseVerb(fs, args, exportUsage, stdout)
	switch {
	case help || err != nil:
		return err
	case len(pos) > 0:
		return usagef("unexpected argument %q\n\n%s", pos[0], exportUsage)
	case *asJSON && *out == "":
		return usagef("--json needs --out FILE: without it, stdout is the bundle")
	}
	c, err := rf.client()
	if err != nil {
		return err
	}
	sub, err := c.ExportBackup(ctx, client.OpsOptions{IdempotencyKey: *key})
	if err != nil {
		return err
	}
	prog := newProgress(stderr)
	job, err := c.WaitOpsTask(ctx, sub.ID, 200*time.Millisecond, func(t *errandapi.OpsTask) {
		prog.show("export: job %s %s", t.ID, t.Status)
	})
	prog.done()
	if err != nil {
		return err
	}
	if job.Status != "SUCCEEDED" {
		return fmt.Errorf("the export job %s is %s: %s", job.ID, job.Status, job.LastError)
	}
	var b engine.Bundle
	if err := json.Unmarshal(job.Result, &b); err != nil {
		return fmt.Errorf("the export job %s answered no bundle: %v", job.ID, err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, job.Result, "", "  "); err != nil {
		return err
	}
	pretty.WriteByte('\n')
	if *out == "" {
		_, err := stdout.Write(pretty.Bytes())
		return err
	}
	if err := writeAtomic(*out, pretty.Bytes()); err != nil {
		return err
	}
	sum := exportSummary{Path: *out, Job: job.ID, Instances: len(b.Instances), Bytes: pretty.Len()}
	for _, bi := range b.Instances {
		sum.Queues += len(bi.Queues)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(sum)
	}
	fmt.Fprintf(stderr, "errand: exported %d instances, %d queues to %s (job %s)\n", sum.Instances, sum.Queues, sum.Path, sum.Job)
	return nil
}

// writeAtomic writes data to path through a temporary file in the same
// directory, so that path holds the old content or the new, never a part.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
