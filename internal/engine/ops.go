package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// OpsConfig configures the operations API's jobs. Zero values take the
// defaults noted.
type OpsConfig struct {
	// RetentionDays is how long finished jobs are kept (default 30).
	RetentionDays int
	// BackupDir is where instance.backup writes its archives; "" refuses
	// instance.backup.
	BackupDir string
	// BackupKey is the 32-byte AES-256 key instance.backup encrypts with
	// and RestoreInstance opens with; nil refuses instance.backup.
	BackupKey []byte
}

// opsState is the engine's part of the operations API: the orgs whose
// operations instance is known to exist, and the in-process handlers of
// the ops functions.
type opsState struct {
	cfg   OpsConfig
	ready sync.Map // org → *task.Instance
	files sync.Map // org → *opsFiles
	fns   deliver.Functions
}

// OpsJob is an operations task with the fields the operations API shows.
type OpsJob struct {
	*task.Task
	Owner          string
	Kind           string
	IdempotencyKey string
}

// opsParams are the params stored with every operations task.
type opsParams struct {
	Owner          string `json:"owner"`
	IdempotencyKey string `json:"idempotency_key"`
}

// opsName is the task name of a job: the identity (owner, kind,
// idempotency_key) becomes the existing unique-name rule of the kind's
// queue in the owner's operations instance.
func opsName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "k" + hex.EncodeToString(sum[:])
}

// opsFunction is the function target that serves kind in every node.
func opsFunction(kind string) string {
	b := []byte(kind)
	for i, c := range b {
		if c == '.' {
			b[i] = '-'
		}
	}
	return "ops/" + string(b)
}

// opsInstance returns org's operations instance, creating it and its
// queues (one per kind) on first use.
func (e *Engine) opsInstance(ctx context.Context, org string) (*task.Instance, error) {
	if v, ok := e.ops.ready.Load(org); ok {
		return v.(*task.Instance), nil
	}
	inst, err := e.opsOwnInstance(ctx, org, task.OpsInstance)
	if err != nil {
		return nil, err
	}
	for _, kind := range task.OpsKinds {
		if _, err := e.store.QueueGet(ctx, store.QueueRef{InstanceID: inst.ID, Name: kind}); err == nil {
			continue
		} else if !task.IsCode(err, task.CodeNotFound) {
			return nil, err
		}
		q := task.NewQueue(inst.ID, kind, task.ModePush)
		q.Target = &task.Target{Function: opsFunction(kind)}
		q.MaxAttempts = task.OpsMaxAttempts
		q.MinBackoffSeconds = task.OpsBackoff.Min.Seconds()
		q.MaxBackoffSeconds = task.OpsBackoff.Max.Seconds()
		q.DeadlineSeconds = task.MaxDeadlineSeconds
		q.CreatedAt = e.now()
		if err := e.store.QueueCreate(ctx, q); err != nil && !task.IsCode(err, task.CodeQueueExists) {
			return nil, err
		}
	}
	e.ops.ready.Store(org, inst)
	return inst, nil
}

// opsOwnInstance gets or makes org's instance name, one of the two the
// operations keep for themselves, with the node's ops retention: an
// instance made earlier with another retention (an earlier run's
// --ops-retention-days) takes this node's. The v1 API cannot reach these
// instances, so the flag is the one way to change it.
func (e *Engine) opsOwnInstance(ctx context.Context, org, name string) (*task.Instance, error) {
	ref := store.InstanceRef{Org: org, Name: name}
	inst, err := e.store.InstanceGet(ctx, ref)
	if task.IsCode(err, task.CodeNotFound) {
		settings := task.DefaultSettings()
		settings.RetentionDays = e.ops.cfg.RetentionDays
		inst = &task.Instance{ID: e.newID(), Org: org, Name: name, CreatedAt: e.now(), Settings: settings, WebhookKey: id.WebhookKey()}
		err = e.store.InstanceCreate(ctx, inst)
		if task.IsCode(err, task.CodeInstanceExists) {
			inst, err = e.store.InstanceGet(ctx, ref)
		}
	}
	if err != nil {
		return nil, err
	}
	if inst.Settings.RetentionDays != e.ops.cfg.RetentionDays {
		return e.store.InstanceUpdate(ctx, ref, func(i *task.Instance) error {
			i.Settings.RetentionDays = e.ops.cfg.RetentionDays
			return nil
		})
	}
	return inst, nil
}

// OpsSubmit stores a job of kind for org, or finds the one with the same
// (org, kind, idempotencyKey): existed reports which. The payload is
// checked for the kind before anything is stored. maxAttempts is clamped
// (nil: 3; above 8: 8).
func (e *Engine) OpsSubmit(ctx context.Context, org, kind string, payload json.RawMessage, key string, maxAttempts *int64) (job *OpsJob, existed bool, err error) {
	if !task.IsOpsKind(kind) {
		return nil, false, task.Errorf(task.CodeUnknownTaskKind, "kind %s is not one of dlq.replay, dlq.purge, backup.export, instance.backup", task.Quote(kind))
	}
	if err := checkIdempotencyKey(key); err != nil {
		return nil, false, err
	}
	if task.IsJSONNull(payload) {
		payload = json.RawMessage("{}")
	}
	if err := task.ValidateJSONBytes(payload, "payload"); err != nil {
		return nil, false, err
	}
	if err := CheckOpsPayload(kind, payload); err != nil {
		return nil, false, err
	}
	if kind == task.KindInstanceBackup {
		if err := e.checkBackupConfigured(); err != nil {
			return nil, false, err
		}
	}
	if err := e.checkOpsSubjects(ctx, org, kind, payload); err != nil {
		return nil, false, err
	}
	inst, err := e.opsInstance(ctx, org)
	if err != nil {
		return nil, false, err
	}
	q, err := e.store.QueueGet(ctx, store.QueueRef{InstanceID: inst.ID, Name: kind})
	if err != nil {
		return nil, false, err
	}
	params, err := json.Marshal(opsParams{Owner: org, IdempotencyKey: key})
	if err != nil {
		return nil, false, err
	}
	t, err := task.NewTask(q, task.AddInput{Name: opsName(key), Payload: payload, Params: params, Source: task.SourceAPI}, e.now(), e.rules)
	if err != nil {
		return nil, false, err
	}
	t.ID = e.newID()
	t.MaxAttempts = task.ClampAttempts(maxAttempts)
	res, err := e.store.TaskAdd(ctx, []*task.Task{t})
	if err != nil {
		return nil, false, err
	}
	if r := res[0]; r.Err != nil {
		if r.Err.Code != task.CodeTaskExists {
			return nil, false, r.Err
		}
		old, err := e.store.TaskGet(ctx, store.TaskRef{InstanceID: inst.ID, ID: r.Err.ID})
		if err != nil {
			return nil, false, err
		}
		return opsJob(old), true, nil
	}
	e.metrics.TasksAdded.Inc()
	e.changed()
	return opsJob(res[0].Task), false, nil
}

// checkOpsSubjects refuses a job whose instance, or whose selected queue,
// does not exist in org (NOT_FOUND naming it): such a job could only fail
// every attempt, or succeed having done nothing, so a typo is answered at
// once. A subject deleted after the job was stored still fails the job
// when it runs. The payload must have passed CheckOpsPayload.
func (e *Engine) checkOpsSubjects(ctx context.Context, org, kind string, payload json.RawMessage) error {
	name := OpsScope(kind, payload)
	if name == "*" {
		return nil
	}
	inst, err := e.store.InstanceGet(ctx, store.InstanceRef{Org: org, Name: name})
	if task.IsCode(err, task.CodeNotFound) {
		return task.InstanceNotFound(name)
	}
	if err != nil || kind == task.KindInstanceBackup {
		return err
	}
	var sel errandapi.DLQSelector
	if err := json.Unmarshal(payload, &sel); err != nil {
		return err
	}
	q := sel.Queue
	if q == "" {
		q = sel.DeadLetterQueue
	}
	if q == "" {
		return nil
	}
	_, err = e.store.QueueGet(ctx, store.QueueRef{InstanceID: inst.ID, Name: q})
	if task.IsCode(err, task.CodeNotFound) {
		return task.NotFoundIn("queue", q, name)
	}
	return err
}

// opsJob reads the operations fields of t.
func opsJob(t *task.Task) *OpsJob {
	var p opsParams
	_ = json.Unmarshal(t.Params, &p)
	return &OpsJob{Task: t, Owner: p.Owner, Kind: t.Queue, IdempotencyKey: p.IdempotencyKey}
}

// OpsGet returns org's job id; a foreign or missing id is NOT_FOUND alike.
func (e *Engine) OpsGet(ctx context.Context, org, jobID string) (*OpsJob, error) {
	inst, err := e.opsInstance(ctx, org)
	if err != nil {
		return nil, err
	}
	t, err := e.store.TaskGet(ctx, store.TaskRef{InstanceID: inst.ID, ID: jobID})
	if err != nil {
		return nil, err
	}
	return opsJob(t), nil
}

// opsListChunk is how many jobs OpsList reads at a time while it looks
// for the ones its caller may see.
const opsListChunk = 200

// OpsList returns one page of org's jobs that sees admits, newest first,
// each with its payload and result (progress): offset skips and limit
// counts jobs sees admits, so a key that reaches only some instances
// pages through its own jobs as if they were the only ones. The store is
// read opsListChunk jobs at a time, each read after the last job of the
// one before (a job submitted meanwhile is not read twice), until the page
// is full or the jobs end.
func (e *Engine) OpsList(ctx context.Context, org string, limit, offset int, sees func(*OpsJob) bool) ([]*OpsJob, error) {
	inst, err := e.opsInstance(ctx, org)
	if err != nil {
		return nil, err
	}
	out := make([]*OpsJob, 0, limit)
	var after *store.TaskPageKey
	for {
		ts, err := e.store.TaskPage(ctx, &store.TaskPageParams{InstanceID: inst.ID, Limit: opsListChunk, After: after})
		if err != nil {
			return nil, err
		}
		if len(ts) > 0 {
			after = store.PageAfter(ts[len(ts)-1])
		}
		ids := make([]string, len(ts))
		for i, t := range ts {
			ids[i] = t.ID
		}
		full, err := e.store.TaskGetMany(ctx, inst.ID, ids)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			f := full[t.ID] // nil: purged between the reads
			if f == nil {
				continue
			}
			j := opsJob(f)
			switch {
			case !sees(j):
			case offset > 0:
				offset--
			default:
				if out = append(out, j); len(out) == limit {
					return out, nil
				}
			}
		}
		if len(ts) < opsListChunk {
			return out, nil
		}
	}
}

// OpsCancel cancels org's job if it has not started or waits for a retry:
// a running one answers RUNNING_NOT_CANCELLABLE and stays running, a
// finished one NOT_CANCELLABLE.
func (e *Engine) OpsCancel(ctx context.Context, org, jobID string) (*OpsJob, error) {
	return e.opsMutate(ctx, org, jobID, func(t *task.Task) error { return t.Cancel(e.now()) })
}

// OpsRetry re-queues org's FAILED job with a fresh budget; anything else
// answers NOT_RETRYABLE.
func (e *Engine) OpsRetry(ctx context.Context, org, jobID string) (*OpsJob, error) {
	return e.opsMutate(ctx, org, jobID, func(t *task.Task) error { return t.Retry(e.now()) })
}

func (e *Engine) opsMutate(ctx context.Context, org, jobID string, fn func(*task.Task) error) (*OpsJob, error) {
	inst, err := e.opsInstance(ctx, org)
	if err != nil {
		return nil, err
	}
	t, err := e.store.TaskUpdate(ctx, store.TaskRef{InstanceID: inst.ID, ID: jobID}, fn)
	if err != nil {
		return nil, err
	}
	e.changed()
	return opsJob(t), nil
}

// withoutOps drops the reserved instances (the operations instance and its
// files) from a list of instances.
func withoutOps(insts []*task.Instance) []*task.Instance {
	out := insts[:0]
	for _, inst := range insts {
		if !task.IsReservedInstance(inst.Name) {
			out = append(out, inst)
		}
	}
	return out
}

// checkIdempotencyKey accepts 1–200 bytes of printable UTF-8: a control
// character or invalid UTF-8 could not come back as it was sent.
func checkIdempotencyKey(key string) error {
	if key == "" || len(key) > task.MaxIdempotencyKey {
		return task.FieldErrorf(task.CodeInvalidArgument, "idempotency_key", "must be 1–%d bytes", task.MaxIdempotencyKey)
	}
	if !utf8.ValidString(key) || strings.IndexFunc(key, unicode.IsControl) >= 0 {
		return task.FieldErrorf(task.CodeInvalidArgument, "idempotency_key", "must be printable UTF-8 (no control characters)")
	}
	return nil
}
