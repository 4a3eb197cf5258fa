package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// instanceArchive is the plaintext of an instance backup: the instance's
// settings and queues, and every task with every field. Payloads, params
// and results are bytes (base64 in the JSON), so they come back exactly as
// they were stored, whitespace included.
type instanceArchive struct {
	Version  int            `json:"version"`
	Instance string         `json:"instance"`
	Settings BundleSettings `json:"settings"`
	Queues   []BundleQueue  `json:"queues"`
	Tasks    []archivedTask `json:"tasks"`
	Made     int64          `json:"made"`
}

// archivedTask is task.Task with its raw JSON kept as bytes.
type archivedTask struct {
	ID, Queue, Name, State                   string
	Pull                                     bool
	Attempt, MaxAttempts, Depth              int
	RunAt, CreatedAt, StartedAt, DeadlineAt  int64
	FinishedAt, LeaseExpiresAt               int64
	DeadlineSeconds                          int
	Source, DeadLetterOf, LastError, LeaseID string
	Target                                   *task.Target
	Params, Payload, Result                  []byte
	Attempts                                 []task.Attempt
}

func archived(t *task.Task) archivedTask {
	return archivedTask{
		ID: t.ID, Queue: t.Queue, Name: t.Name, State: string(t.State), Pull: t.Pull, Attempt: t.Attempt,
		MaxAttempts: t.MaxAttempts, Depth: t.Depth, RunAt: t.RunAt, CreatedAt: t.CreatedAt, StartedAt: t.StartedAt,
		DeadlineAt: t.DeadlineAt, FinishedAt: t.FinishedAt, LeaseExpiresAt: t.LeaseExpiresAt,
		DeadlineSeconds: t.DeadlineSeconds, Source: t.Source, DeadLetterOf: t.DeadLetterOf, LastError: t.LastError,
		LeaseID: t.LeaseID, Target: t.Target, Params: t.Params, Payload: t.Payload, Result: t.Result, Attempts: t.Attempts,
	}
}

func (a *archivedTask) task(instanceID string) *task.Task {
	return &task.Task{
		InstanceID: instanceID, ID: a.ID, Queue: a.Queue, Name: a.Name, State: task.State(a.State), Pull: a.Pull,
		Attempt: a.Attempt, MaxAttempts: a.MaxAttempts, Depth: a.Depth, RunAt: a.RunAt, CreatedAt: a.CreatedAt,
		StartedAt: a.StartedAt, DeadlineAt: a.DeadlineAt, FinishedAt: a.FinishedAt, LeaseExpiresAt: a.LeaseExpiresAt,
		DeadlineSeconds: a.DeadlineSeconds, Source: a.Source, DeadLetterOf: a.DeadLetterOf, LastError: a.LastError,
		LeaseID: a.LeaseID, Target: a.Target, Params: a.Params, Payload: a.Payload, Result: a.Result, Attempts: a.Attempts,
	}
}

// BackupResult is the result of an instance.backup job.
type BackupResult struct {
	// Instance is the instance archived (or, from RestoreInstance, the
	// instance restored into).
	Instance string `json:"instance"`
	Path     string `json:"path"`
	Bytes    int    `json:"bytes"`
	Queues   int    `json:"queues"`
	Tasks    int    `json:"tasks"`
	SHA256   string `json:"sha256"`
}

// checkBackupConfigured refuses instance.backup on a node without a key or
// a directory, at submission.
func (e *Engine) checkBackupConfigured() error {
	if len(e.ops.cfg.BackupKey) != BackupKeySize || e.ops.cfg.BackupDir == "" {
		return task.Errorf(task.CodeInvalidArgument, "instance backups are off on this server: it needs a backup directory and a %d-byte backup key (errand serve --backup-dir DIR --backup-key-file FILE)", BackupKeySize)
	}
	return nil
}

// runInstanceBackup writes an encrypted archive of one of the owner's
// instances to the backup directory as <instance>-<job id>.errand-backup;
// the file appears only once it is whole.
func (e *Engine) runInstanceBackup(ctx context.Context, j *opsRun) (any, error) {
	if err := e.checkBackupConfigured(); err != nil {
		return nil, err
	}
	var p instancePayload
	if err := decodePayload(j.t.Payload, &p); err != nil {
		return nil, err
	}
	plain, n, err := e.archiveInstance(ctx, j.owner, p.Instance)
	if err != nil {
		return nil, err
	}
	sealed, err := sealArchive(e.ops.cfg.BackupKey, plain)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(e.ops.cfg.BackupDir, p.Instance+"-"+j.t.ID+".errand-backup")
	if err := writeFileAtomic(path, sealed); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(sealed)
	n.Instance, n.Path, n.Bytes, n.SHA256 = p.Instance, path, len(sealed), hex.EncodeToString(sum[:])
	return n, nil
}

// archiveInstance reads one instance whole into the archive's plaintext.
func (e *Engine) archiveInstance(ctx context.Context, org, name string) ([]byte, *BackupResult, error) {
	inst, err := e.store.InstanceGet(ctx, store.InstanceRef{Org: org, Name: name})
	if err != nil {
		return nil, nil, fmt.Errorf("instance %q: %w", name, err)
	}
	qs, err := e.store.QueueList(ctx, inst.ID)
	if err != nil {
		return nil, nil, err
	}
	a := instanceArchive{Version: archiveVersion, Instance: name, Settings: BundleSettings(inst.Settings), Made: e.now(), Tasks: []archivedTask{}}
	for _, q := range qs {
		a.Queues = append(a.Queues, bundleQueue(q))
		p := store.ListParams{InstanceID: inst.ID, Queue: q.Name, Limit: 200}
		for {
			page, err := e.store.TaskList(ctx, &p)
			if err != nil {
				return nil, nil, err
			}
			ids := make([]string, len(page.Tasks))
			for i, t := range page.Tasks {
				ids[i] = t.ID
			}
			full, err := e.store.TaskGetMany(ctx, inst.ID, ids)
			if err != nil {
				return nil, nil, err
			}
			for _, id := range ids {
				if t := full[id]; t != nil {
					a.Tasks = append(a.Tasks, archived(t))
				}
			}
			if page.Cursor == "" {
				break
			}
			p.Cursor = page.Cursor
		}
	}
	plain, err := json.Marshal(a)
	return plain, &BackupResult{Queues: len(a.Queues), Tasks: len(a.Tasks)}, err
}

// RestoreInstance opens an instance backup with key and recreates it in org
// as a new instance named into ("" for the archived instance's name), with
// its settings, queues and every task as archived (ids, states, attempts,
// payloads byte for byte). A wrong key, a truncated or damaged archive, or
// an existing instance named into is refused before anything is written; a
// failure part-way removes the instance it was making. The result's Path
// is the instance restored into.
func (e *Engine) RestoreInstance(ctx context.Context, org, into, path string, key []byte) (*BackupResult, error) {
	if into != "" {
		if err := task.ValidateQueueName(into, "into"); err != nil {
			return nil, err
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "archive", "cannot be read: %v", err)
	}
	plain, err := openArchive(key, raw)
	if err != nil {
		return nil, err
	}
	var a instanceArchive
	if err := json.Unmarshal(plain, &a); err != nil {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "archive", "holds no instance backup: %v", err)
	}
	if into == "" {
		into = a.Instance
		if err := task.ValidateQueueName(into, "archive.instance"); err != nil {
			return nil, err
		}
	}
	if _, err := e.store.InstanceGet(ctx, store.InstanceRef{Org: org, Name: into}); err == nil {
		return nil, task.Errorf(task.CodeInstanceExists, "instance %q exists; restore into a new name", into)
	}
	inst, err := e.InstanceCreate(ctx, org, into)
	if err != nil {
		return nil, err
	}
	if err := e.fillInstance(ctx, org, inst, &a); err != nil {
		_ = e.store.InstanceDelete(context.WithoutCancel(ctx), store.InstanceRef{Org: org, Name: into})
		return nil, err
	}
	e.changed()
	return &BackupResult{Instance: into, Path: path, Bytes: len(raw), Queues: len(a.Queues), Tasks: len(a.Tasks)}, nil
}

func (e *Engine) fillInstance(ctx context.Context, org string, inst *task.Instance, a *instanceArchive) error {
	rep := &ImportReport{}
	bi := BundleInstance{Name: inst.Name, Settings: a.Settings, Queues: a.Queues}
	if err := e.importInstance(ctx, org, bi, rep); err != nil {
		return err
	}
	for start := 0; start < len(a.Tasks); start += 500 {
		end := min(start+500, len(a.Tasks))
		ts := make([]*task.Task, 0, end-start)
		for i := start; i < end; i++ {
			ts = append(ts, a.Tasks[i].task(inst.ID))
		}
		res, err := e.store.TaskAdd(ctx, ts)
		if err != nil {
			return err
		}
		for _, r := range res {
			if r.Err != nil {
				return r.Err
			}
		}
	}
	return nil
}
