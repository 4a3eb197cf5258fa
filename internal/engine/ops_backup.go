package engine

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// instanceArchive is the plaintext of a format 1 instance backup: the instance's
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
	Priority                                 int `json:",omitempty"` // archives before priorities hold none
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
		MaxAttempts: t.MaxAttempts, Depth: t.Depth, Priority: t.Priority, RunAt: t.RunAt, CreatedAt: t.CreatedAt, StartedAt: t.StartedAt,
		DeadlineAt: t.DeadlineAt, FinishedAt: t.FinishedAt, LeaseExpiresAt: t.LeaseExpiresAt,
		DeadlineSeconds: t.DeadlineSeconds, Source: t.Source, DeadLetterOf: t.DeadLetterOf, LastError: t.LastError,
		LeaseID: t.LeaseID, Target: t.Target, Params: t.Params, Payload: t.Payload, Result: t.Result, Attempts: t.Attempts,
	}
}

func (a *archivedTask) task(instanceID string) *task.Task {
	return &task.Task{
		InstanceID: instanceID, ID: a.ID, Queue: a.Queue, Name: a.Name, State: task.State(a.State), Pull: a.Pull,
		Attempt: a.Attempt, MaxAttempts: a.MaxAttempts, Depth: a.Depth, Priority: a.Priority, RunAt: a.RunAt, CreatedAt: a.CreatedAt,
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
	Triggers int    `json:"triggers"`
	Tasks    int    `json:"tasks"`
	SHA256   string `json:"sha256,omitempty"`
	// HooksRenewed counts the restored hook rules that got a new URL token
	// because the archived one is in use in the store.
	HooksRenewed int `json:"hooksRenewed,omitempty"`
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
// instances to the backup directory as <instance>-<job id>.errand-backup,
// streamed; the file appears only once it is whole.
func (e *Engine) runInstanceBackup(ctx context.Context, j *opsRun) (any, error) {
	if err := e.checkBackupConfigured(); err != nil {
		return nil, err
	}
	var p instancePayload
	if err := decodePayload(j.t.Payload, &p); err != nil {
		return nil, err
	}
	return e.writeArchive(ctx, j.owner, p.Instance, filepath.Join(e.ops.cfg.BackupDir, p.Instance+"-"+j.t.ID+".errand-backup"))
}

// writeArchive writes the encrypted archive of org's instance to path,
// streamed; the file appears only once it is whole.
func (e *Engine) writeArchive(ctx context.Context, org, instance, path string) (*BackupResult, error) {
	var n *BackupResult
	h := sha256.New()
	cw := &countingWriter{}
	err := writeFileAtomic(path, func(w io.Writer) error {
		sw, err := newSealWriter(io.MultiWriter(w, h, cw), e.ops.cfg.BackupKey)
		if err != nil {
			return err
		}
		bw := bufio.NewWriterSize(sw, 64<<10)
		if n, err = e.archiveInstance(ctx, org, instance, bw); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		return sw.Close()
	})
	if err != nil {
		return nil, err
	}
	n.Instance, n.Path, n.Bytes, n.SHA256 = instance, path, int(cw.n), hex.EncodeToString(h.Sum(nil))
	return n, nil
}

// countingWriter counts what is written to it.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// archiveHead is the first record of an archive's plaintext: the
// instance's settings, queues and trigger rules (hook tokens and secrets
// included: the archive is encrypted). The tasks follow, one record each.
type archiveHead struct {
	Version  int            `json:"version"`
	Instance string         `json:"instance"`
	Settings BundleSettings `json:"settings"`
	// WebhookKey is the instance's signing key, so that receivers check a
	// restored instance's deliveries as they did the original's; an
	// archive made before it was kept has none, and its restore keeps the
	// new instance's own key.
	WebhookKey string         `json:"webhookKey,omitempty"`
	Queues     []BundleQueue  `json:"queues"`
	Triggers   []task.Trigger `json:"triggers"`
	// ChainEvents are the task rules' pending events at the snapshot: a
	// finished task whose follow-up was not added yet. The restore stores
	// them again, so the follow-up is added there (an archive made before
	// they were kept has none).
	ChainEvents []archivedEvent `json:"chainEvents,omitempty"`
	Made        int64           `json:"made"`
}

// archivedEvent is a pending chain event as an archive holds it.
type archivedEvent struct {
	Rule       string `json:"rule"`
	Task       string `json:"task"`
	State      string `json:"state"`
	FinishedAt int64  `json:"finishedAt"`
}

// archiveInstance writes one instance's plaintext to w: its head, then
// every task, as of one moment (the store's snapshot), so that a chain's
// follow-up is never in an archive without the task it followed, nor a
// dead-letter copy without its original.
func (e *Engine) archiveInstance(ctx context.Context, org, name string, w io.Writer) (*BackupResult, error) {
	enc := json.NewEncoder(w)
	res := &BackupResult{}
	err := e.store.InstanceSnapshot(ctx, &store.SnapshotParams{
		Ref: store.InstanceRef{Org: org, Name: name},
		Head: func(h *store.SnapshotHead) error {
			head := archiveHead{Version: archiveStreamVersion, Instance: name, Settings: BundleSettings(h.Instance.Settings),
				WebhookKey: h.Instance.WebhookKey, Made: e.now(), Triggers: []task.Trigger{}}
			for _, q := range h.Queues {
				head.Queues = append(head.Queues, bundleQueue(q))
			}
			for _, tr := range h.Rules {
				head.Triggers = append(head.Triggers, *tr)
			}
			for _, ev := range h.Events {
				head.ChainEvents = append(head.ChainEvents, archivedEvent{Rule: ev.RuleID, Task: ev.TaskID, State: string(ev.State), FinishedAt: ev.FinishedAt})
			}
			res.Queues, res.Triggers = len(h.Queues), len(h.Rules)
			return enc.Encode(head)
		},
		Task: func(t *task.Task) error {
			res.Tasks++
			return enc.Encode(archived(t))
		},
	})
	if errors.Is(err, task.ErrNotFound) {
		return nil, fmt.Errorf("instance %q: %w", name, err)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// scanArchive opens an archive with key and calls head with its head, then
// each with every task in order. Format 2 is read a chunk at a time; a
// format 1 archive (one sealed document) is read whole.
func scanArchive(path string, key []byte, head func(*archiveHead) error, each func(*archivedTask) error) error {
	f, err := os.Open(path)
	if err != nil {
		return task.FieldErrorf(task.CodeInvalidArgument, "archive", "cannot be read: %v", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	hdr, version, err := readArchiveHeader(r, key)
	if err != nil {
		return err
	}
	notBackup := func(err error) error {
		return task.FieldErrorf(task.CodeInvalidArgument, "archive", "holds no instance backup: %v", err)
	}
	if version == archiveVersion {
		rest, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		plain, err := openArchive(key, append(hdr, rest...))
		if err != nil {
			return err
		}
		var a instanceArchive
		if err := json.Unmarshal(plain, &a); err != nil {
			return notBackup(err)
		}
		if err := head(&archiveHead{Version: a.Version, Instance: a.Instance, Settings: a.Settings, Queues: a.Queues, Made: a.Made}); err != nil {
			return err
		}
		for i := range a.Tasks {
			if err := each(&a.Tasks[i]); err != nil {
				return err
			}
		}
		return nil
	}
	or, err := newOpenReader(r, key, hdr)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(or)
	var h archiveHead
	if err := dec.Decode(&h); err != nil {
		var te *task.Error
		if errors.As(err, &te) {
			return err
		}
		return notBackup(err)
	}
	if err := head(&h); err != nil {
		return err
	}
	for {
		var t archivedTask
		err := dec.Decode(&t)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var te *task.Error
			if errors.As(err, &te) {
				return err
			}
			return notBackup(err)
		}
		if err := each(&t); err != nil {
			return err
		}
	}
}

// RestoreInstance opens an instance backup with key and recreates it in org
// as a new instance named into ("" for the archived instance's name), with
// its settings, queues, trigger rules and every task as archived (ids,
// states, attempts, payloads byte for byte). The whole archive is read and
// authenticated first: a wrong key, a truncated or damaged archive, or an
// existing instance named into is refused before anything is written; a
// failure part-way removes the instance it was making. The archive is read
// twice, a chunk at a time, never whole.
func (e *Engine) RestoreInstance(ctx context.Context, org, into, path string, key []byte) (*BackupResult, error) {
	if into != "" {
		if err := task.ValidateQueueName(into, "into"); err != nil {
			return nil, err
		}
	}
	var head archiveHead
	res := &BackupResult{Path: path}
	err := scanArchive(path, key, func(h *archiveHead) error {
		head = *h
		return nil
	}, func(*archivedTask) error {
		res.Tasks++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if into == "" {
		into = head.Instance
		if err := task.ValidateQueueName(into, "archive.instance"); err != nil {
			return nil, err
		}
	}
	if _, err := e.store.InstanceGet(ctx, store.InstanceRef{Org: org, Name: into}); err == nil {
		return nil, task.Errorf(task.CodeInstanceExists, "instance %q exists; restore into a new name", into)
	}
	if st, err := os.Stat(path); err == nil {
		res.Bytes = int(st.Size())
	}
	inst, err := e.InstanceCreate(ctx, org, into)
	if err != nil {
		return nil, err
	}
	if err := e.fillInstance(ctx, org, inst, &head, path, key, res); err != nil {
		_ = e.store.InstanceDelete(context.WithoutCancel(ctx), store.InstanceRef{Org: org, Name: into})
		return nil, err
	}
	e.changed()
	e.rulesChanged()
	res.Instance, res.Queues, res.Triggers = into, len(head.Queues), len(head.Triggers)
	return res, nil
}

// fillInstance restores the settings, queues and rules of head into inst,
// then streams the archive's tasks in, 500 per write.
func (e *Engine) fillInstance(ctx context.Context, org string, inst *task.Instance, head *archiveHead, path string, key []byte, res *BackupResult) error {
	rep := &ImportReport{}
	bi := BundleInstance{Name: inst.Name, Settings: head.Settings, Queues: head.Queues}
	if err := e.importInstance(ctx, org, bi, rep); err != nil {
		return err
	}
	if head.WebhookKey != "" {
		if _, err := e.store.InstanceUpdate(ctx, store.InstanceRef{Org: org, Name: inst.Name}, func(i *task.Instance) error {
			i.WebhookKey = head.WebhookKey
			return nil
		}); err != nil {
			return err
		}
	}
	for _, tr := range head.Triggers {
		renewed, err := e.restoreTrigger(ctx, inst, tr)
		if err != nil {
			return err
		}
		if renewed {
			res.HooksRenewed++
		}
	}
	batch := make([]*task.Task, 0, 500)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		out, err := e.store.TaskAdd(ctx, batch)
		if err != nil {
			return err
		}
		for _, r := range out {
			if r.Err != nil {
				return r.Err
			}
		}
		batch = batch[:0]
		return nil
	}
	err := scanArchive(path, key, func(*archiveHead) error { return nil }, func(a *archivedTask) error {
		batch = append(batch, a.task(inst.ID))
		if len(batch) == cap(batch) {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	// The follow-ups the original had not added yet, added by the chainer
	// here, now that their tasks and rules are in.
	evs := make([]*store.TriggerEvent, len(head.ChainEvents))
	for i, ev := range head.ChainEvents {
		evs[i] = &store.TriggerEvent{RuleID: ev.Rule, TaskID: ev.Task, State: task.State(ev.State), FinishedAt: ev.FinishedAt}
	}
	return e.store.TriggerEventAdd(ctx, &store.TriggerEventAddParams{InstanceID: inst.ID, Events: evs})
}

// restoreTrigger stores an archived rule in inst as it was, hook token and
// secret included, so that senders keep their URL and signatures. A token
// another instance of the store holds (the archived instance itself, when
// it still exists) cannot be shared: the rule gets a new one, and renewed
// says so. A schedule rule waits for its next tick after now.
func (e *Engine) restoreTrigger(ctx context.Context, inst *task.Instance, tr task.Trigger) (renewed bool, err error) {
	tr.InstanceID = inst.ID
	if task.IsJSONNull(tr.Params) {
		tr.Params = nil
	}
	if task.IsJSONNull(tr.Payload) {
		tr.Payload = nil
	}
	if tr.Kind == task.TriggerHook {
		if _, err := e.store.TriggerGetHook(ctx, store.HookRef{Token: tr.HookToken}); err == nil || tr.HookToken == "" {
			tr.HookToken, renewed = "hk_"+id.Secret(16), true
		} else if !task.IsCode(err, task.CodeNotFound) {
			return false, err
		}
	}
	tr.NextTickAt = e.firstTick(&tr, e.now())
	return renewed, e.store.TriggerCreate(ctx, &store.TriggerCreateParams{Trigger: &tr})
}
