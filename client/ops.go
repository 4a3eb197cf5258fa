package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/errandhq/errand/errandapi"
)

// The operations API (/api/…, docs/ops.md): long-running administrative
// work runs as a job that is answered at once and polled. Its refusals
// carry lowercase codes (not_cancellable); the client reads them as the
// same *Error with the upper-case Code, so errors.Is(err, ErrNotFound) and
// errors.Is(err, ErrUnknownTaskKind) hold for them as for the v1 API.

// OpsOptions are the optional fields of the shortcut routes (PurgeDeadLetters,
// ExportBackup, BackupInstance). Without an IdempotencyKey every call is a
// new job, and the call is not sent again once it may have reached the
// server; with one, a repeat answers the job of the first try.
type OpsOptions struct {
	IdempotencyKey string
	// MaxAttempts is the job's attempt budget (default 3, at most 8).
	MaxAttempts int64
}

// SubmitOpsTask submits a job (POST /api/tasks). The answer is the new job
// (AlreadyExisted false) or the job of the same kind and IdempotencyKey
// that exists already, whatever its state (AlreadyExisted true). The
// submission names its idempotency key, so it is retried like any call safe
// to repeat: a retry after a lost answer finds the job of the first try.
func (c *Client) SubmitOpsTask(ctx context.Context, s errandapi.OpsSubmit) (*errandapi.OpsTaskResponse, error) {
	return c.opsCall(ctx, call{method: "POST", path: []string{"api", "tasks"}, body: s, repeatable: true})
}

// OpsListOptions select a page of the caller's jobs; zero values are left
// out (50 jobs, from the newest). The server clamps Limit to 1–200.
type OpsListOptions struct {
	Limit  int
	Offset int
}

// ListOpsTasks returns one page of the caller's jobs, newest first, with
// the limit and offset the server used.
func (c *Client) ListOpsTasks(ctx context.Context, o OpsListOptions) (*errandapi.OpsTaskList, error) {
	q := url.Values{}
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Offset != 0 {
		q.Set("offset", strconv.Itoa(o.Offset))
	}
	var out errandapi.OpsTaskList
	if err := c.do(ctx, call{method: "GET", path: []string{"api", "tasks"}, query: q, out: &out, repeatable: true}); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetOpsTask returns one job (not_found for another owner's, or one the
// key's grants do not reach).
func (c *Client) GetOpsTask(ctx context.Context, id string) (*errandapi.OpsTaskResponse, error) {
	return c.opsCall(ctx, call{method: "GET", path: []string{"api", "tasks", id}, repeatable: true})
}

// CancelOpsTask cancels a job that has not started or waits for a retry
// (running_not_cancellable while it runs, not_cancellable once finished).
// It is retried: a repeat after a try that cancelled answers
// not_cancellable.
func (c *Client) CancelOpsTask(ctx context.Context, id string) (*errandapi.OpsTaskResponse, error) {
	return c.opsCall(ctx, call{method: "POST", path: []string{"api", "tasks", id, "cancel"}, repeatable: true})
}

// RetryOpsTask puts a FAILED job back to PENDING with a fresh budget
// (not_retryable otherwise). As RetryTask, it is not sent again once it
// may have reached the server: the job may fail again in between and a
// repeat would give it yet another budget.
func (c *Client) RetryOpsTask(ctx context.Context, id string) (*errandapi.OpsTaskResponse, error) {
	return c.opsCall(ctx, call{method: "POST", path: []string{"api", "tasks", id, "retry"}})
}

// PurgeDeadLetters submits a dlq.purge of the dead letters sel names
// (DELETE /api/dlq).
func (c *Client) PurgeDeadLetters(ctx context.Context, sel errandapi.DLQSelector, o OpsOptions) (*errandapi.OpsTaskResponse, error) {
	payload, err := errandapi.Marshal(sel)
	if err != nil {
		return nil, fmt.Errorf("client: encoding the selector: %w", err)
	}
	return c.shortcut(ctx, "DELETE", []string{"api", "dlq"}, payload, o)
}

// ExportBackup submits a backup.export (POST /api/backup/export); once the
// job has SUCCEEDED its Result is the configuration bundle.
func (c *Client) ExportBackup(ctx context.Context, o OpsOptions) (*errandapi.OpsTaskResponse, error) {
	return c.shortcut(ctx, "POST", []string{"api", "backup", "export"}, nil, o)
}

// DownloadBundle writes the configuration bundle of a SUCCEEDED
// backup.export job (GET /api/tasks/{id}/bundle) to w as it arrives, so a
// bundle of any size passes through bounded memory. The job's result
// (errandapi.ExportResult) gives the bundle's size and SHA-256 to check the
// bytes against. It is sent once: a broken download returns an error, and
// w may then hold a part.
func (c *Client) DownloadBundle(ctx context.Context, jobID string, w io.Writer) error {
	return c.do(ctx, call{method: "GET", path: []string{"api", "tasks", jobID, "bundle"}, stream: w})
}

// BackupInstance submits an instance.backup of instance (POST
// /api/instances/{instance}/backup); once the job has SUCCEEDED its Result
// says where the archive was written.
func (c *Client) BackupInstance(ctx context.Context, instance string, o OpsOptions) (*errandapi.OpsTaskResponse, error) {
	return c.shortcut(ctx, "POST", []string{"api", "instances", instance, "backup"}, nil, o)
}

// WaitOpsTask polls the job every interval (default 1 s) until it has
// finished (SUCCEEDED, FAILED or CANCELLED) and returns it, or returns the
// context's error. progress, when not nil, gets each answer read.
func (c *Client) WaitOpsTask(ctx context.Context, id string, interval time.Duration, progress func(*errandapi.OpsTask)) (*errandapi.OpsTask, error) {
	if interval <= 0 {
		interval = time.Second
	}
	for {
		res, err := c.GetOpsTask(ctx, id)
		if err != nil {
			return nil, err
		}
		if progress != nil {
			progress(&res.Task)
		}
		switch res.Task.Status {
		case "SUCCEEDED", "FAILED", "CANCELLED":
			return &res.Task, nil
		}
		if err := c.sleep(ctx, interval); err != nil {
			return nil, err
		}
	}
}

func (c *Client) shortcut(ctx context.Context, method string, path []string, payload json.RawMessage, o OpsOptions) (*errandapi.OpsTaskResponse, error) {
	b := errandapi.OpsShortcut{Payload: payload, IdempotencyKey: o.IdempotencyKey}
	if o.MaxAttempts != 0 {
		b.MaxAttempts = &o.MaxAttempts
	}
	return c.opsCall(ctx, call{method: method, path: path, body: b, repeatable: o.IdempotencyKey != ""})
}

func (c *Client) opsCall(ctx context.Context, cl call) (*errandapi.OpsTaskResponse, error) {
	var out errandapi.OpsTaskResponse
	cl.out = &out
	if err := c.do(ctx, cl); err != nil {
		return nil, err
	}
	return &out, nil
}
