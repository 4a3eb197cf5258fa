package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

const exportUsage = `usage:
  errand export [--url URL] [--api-key KEY] [--out FILE] [--idempotency-key K] [--json]

Write the organization's configuration bundle — its instances, their settings,
their queues with every setting and their trigger rules — as JSON, for errand
import on another host. It never holds API keys, webhook signing keys, hook
URLs' tokens or secrets, or tasks, so it is safe to keep in a repository. The
export runs on the node as a backup.export job (POST /api/backup/export); this
command waits for it, showing its state on a terminal, then streams the bundle
(GET /api/tasks/{id}/bundle) and checks its size and SHA-256. The key needs the
full grant on every instance (full:*).

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
	Triggers  int    `json:"triggers"`
	Bytes     int64  `json:"bytes"`
}

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rf := addRemoteFlags(fs)
	// A node that does not answer is explained as every verb explains it.
	defer func() { err = reach(*rf.url, err) }()
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
	var res errandapi.ExportResult
	if err := json.Unmarshal(job.Result, &res); err != nil || res.Bundle == "" {
		return fmt.Errorf("the export job %s answered no bundle (%s)", job.ID, job.Result)
	}
	sum := exportSummary{Path: *out, Job: job.ID, Instances: res.Instances, Queues: res.Queues, Triggers: res.Triggers, Bytes: res.Bytes}
	if *out == "" {
		// Streamed to stdout: a download that does not match the job's
		// size and hash still exits 1.
		return download(ctx, c, job.ID, &res, stdout)
	}
	if err := writeAtomicFunc(*out, func(w io.Writer) error { return download(ctx, c, job.ID, &res, w) }); err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(sum)
	}
	fmt.Fprintf(stderr, "errand: exported %d instances, %d queues, %d triggers to %s (job %s)\n", sum.Instances, sum.Queues, sum.Triggers, sum.Path, sum.Job)
	return nil
}

// download streams the bundle of job to w and checks it against the
// job's size and SHA-256.
func download(ctx context.Context, c *client.Client, job string, res *errandapi.ExportResult, w io.Writer) error {
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(w, h)}
	if err := c.DownloadBundle(ctx, job, cw); err != nil {
		return err
	}
	if cw.n != res.Bytes || hex.EncodeToString(h.Sum(nil)) != res.SHA256 {
		return fmt.Errorf("the bundle of job %s arrived as %d bytes that do not match the job's %d bytes and sha256 %s", job, cw.n, res.Bytes, res.SHA256)
	}
	return nil
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeAtomicFunc writes what fill writes to path through a temporary
// file in the same directory; a fill that fails leaves path as it was.
func writeAtomicFunc(path string, fill func(w io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := fill(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
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
