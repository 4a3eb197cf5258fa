// Package store is errand's one storage seam. Every backend (sqlite,
// postgres) implements Store and passes the conformance suite in storetest.
//
// Rules every backend keeps:
//   - Errors are domain errors (*task.Error): task.ErrNotFound for a missing
//     row, TASK_EXISTS / QUEUE_EXISTS / INSTANCE_EXISTS for conflicts,
//     LEASE_LOST for a fenced write whose lease no longer holds. Backend errors
//     are translated in one place per backend.
//   - Every task, queue and count lookup is keyed by instance ID first; an
//     instance is found only by (org, name) or (org, id), so no call reaches
//     a foreign organization's rows.
//   - Times are epoch milliseconds supplied by the caller (the engine's clock);
//     a backend never reads its own clock for task times.
//   - Writes that change a task's state go through a domain method of
//     task.Task (Claim, Finish, Cancel, …): the backend stores the result,
//     it never decides a transition itself.
//
// Arguments follow one convention, so that two values of the same type
// can never be swapped unseen: a method names the row it reads or writes
// with a ref value (InstanceRef, QueueRef, TaskRef, KeyRef, and LeaseRef
// for an attempt in flight), and takes what selects or changes several rows
// as a pointer to its *Params struct (ListParams, ClaimParams,
// FinishParams), whose fields can be added to without breaking a caller.
// No method takes two strings in a row.
package store

import (
	"context"
	"math"
	"time"

	"github.com/errandhq/errand/internal/task"
)

// Store is the storage seam.
type Store interface {
	KeyStore
	OpsStore
	TriggerStore
	NodeStore
	APIRateStore
	UsageStore
	ChannelStore
	ConsoleSessionStore

	// Close releases the backend; it is safe to call once.
	Close() error
	// Ping reports whether the backend answers now (for /healthz): nil, or
	// an UNAVAILABLE error.
	Ping(ctx context.Context) error

	// InstanceCreate stores a new instance and its `default` queue (push, no
	// target) in one transaction. INSTANCE_EXISTS if (org, name) is taken.
	InstanceCreate(ctx context.Context, inst *task.Instance) error
	// InstanceGet finds an instance by (org, name).
	InstanceGet(ctx context.Context, ref InstanceRef) (*task.Instance, error)
	// InstanceGetByID finds an instance by its ID (engine use).
	InstanceGetByID(ctx context.Context, id string) (*task.Instance, error)
	// InstanceList lists an organization's instances by name.
	InstanceList(ctx context.Context, org string) ([]*task.Instance, error)
	// InstanceUpdate applies fn to the instance under a write lock and stores
	// what fn left (settings, webhook key).
	InstanceUpdate(ctx context.Context, ref InstanceRef, fn func(*task.Instance) error) (*task.Instance, error)
	// InstanceDelete removes an instance with its queues, tasks and
	// channel logs.
	InstanceDelete(ctx context.Context, ref InstanceRef) error

	// QueueCreate stores a new queue. QUEUE_EXISTS if the name is taken; a
	// deadLetterQueue that does not exist in the instance is INVALID_ARGUMENT
	// naming deadLetterQueue.
	QueueCreate(ctx context.Context, q *task.Queue) error
	// QueueGet finds one queue.
	QueueGet(ctx context.Context, ref QueueRef) (*task.Queue, error)
	// QueueList lists an instance's queues by name.
	QueueList(ctx context.Context, instanceID string) ([]*task.Queue, error)
	// QueueListAll lists every queue of every instance (the engine's view).
	QueueListAll(ctx context.Context) ([]*task.Queue, error)
	// QueueUpdate applies fn to the queue under a write lock and stores it,
	// with the same deadLetterQueue check as QueueCreate.
	QueueUpdate(ctx context.Context, ref QueueRef, fn func(*task.Queue) error) (*task.Queue, error)
	// QueueDelete removes a queue and all its tasks; it returns how many
	// tasks went with it.
	QueueDelete(ctx context.Context, ref QueueRef) (int, error)
	// QueuePurge removes every task of a queue and returns how many: those
	// whose attempt is in flight stay RUNNING, their slots held, under
	// task.PurgedLease of their lease, and go when the attempt ends
	// (TaskFinish) or is rescued; they are counted once, by the purge that
	// marks them.
	QueuePurge(ctx context.Context, ref QueueRef) (int, error)
	// QueueCounts counts a queue's tasks by state, each count stopping at
	// limit (so a count equal to limit means "at least limit").
	QueueCounts(ctx context.Context, ref QueueRef, limit int) (map[task.State]int, error)
	// QueueActivity counts, per minute of [Since, Until), a queue's tasks
	// added (createdAt), succeeded and failed (finishedAt of a task that
	// ended so), each kind stopping at Limit tasks (Capped then says so).
	QueueActivity(ctx context.Context, p *ActivityParams) (*Activity, error)

	// TaskAdd stores tasks in one transaction, each one independently: a
	// task whose name is already used in its queue (by a record still kept)
	// gets a TASK_EXISTS result carrying the existing id and is not stored;
	// the others are. The tasks' IDs are set by the caller. Results are in
	// the order of tasks.
	TaskAdd(ctx context.Context, tasks []*task.Task) ([]AddResult, error)
	// TaskGet returns one task with payload, result and attempts.
	TaskGet(ctx context.Context, ref TaskRef) (*task.Task, error)
	// TaskGetMany returns the tasks of one instance with the given ids, in
	// one read, each with payload, result and attempts, keyed by id. An id
	// that names no task of the instance is absent from the map.
	TaskGetMany(ctx context.Context, instanceID string, ids []string) (map[string]*task.Task, error)
	// TaskList returns one page of a queue's tasks without payloads or
	// results, in the listing order of ListParams.
	TaskList(ctx context.Context, p *ListParams) (*ListPage, error)
	// TaskUpdate reads one task under a write lock, applies fn (a domain
	// method such as Cancel, Retry, RunNow, Extend) and stores the task if fn
	// returned nil. fn's error is returned unchanged and nothing is written.
	TaskUpdate(ctx context.Context, ref TaskRef, fn func(*task.Task) error) (*task.Task, error)

	// TaskClaim claims up to p.Limit due tasks of one queue in runAt order:
	// each is moved to RUNNING by task.Claim with a fresh lease, and
	// returned with its payload. Claimed rows are locked so that no two
	// claimers ever get the same task.
	TaskClaim(ctx context.Context, p *ClaimParams) ([]*task.Task, error)
	// TaskFinish stores the outcome of attempts in one transaction. Each
	// write is fenced: it applies only while the row is RUNNING with the
	// same LeaseID as p.LeaseID and, when p.LiveAt is not 0, while the
	// row's lease expires after p.LiveAt; else its result is LEASE_LOST. A
	// p.DeadLetter, when set, is added in the same transaction (its ID set
	// by the caller). Results are in the order of ps. A write that misses
	// because its task was purged during the attempt (or that carries a
	// purged lease, as the rescuer's do) removes the task instead and
	// answers task.ErrPurged (FinishPurged).
	TaskFinish(ctx context.Context, ps []*FinishParams) ([]error, error)
	// TaskHeartbeat moves the lease expiry of attempts still in flight to
	// until, in one transaction: each ref applies only while its task is
	// RUNNING under the same lease, or its purged lease (a purged task's
	// attempt keeps its slot while the target works; a miss is skipped, not
	// an error). It
	// returns how many leases were extended. A node's dispatcher calls it
	// for its deliveries, so a short lease outlives a slow target but not
	// the node.
	TaskHeartbeat(ctx context.Context, refs []LeaseRef, until int64) (int, error)
	// TaskExpired returns up to limit RUNNING tasks whose lease expired at
	// or before now (for the rescuer), with payloads.
	TaskExpired(ctx context.Context, now int64, limit int) ([]*task.Task, error)
	// TaskNextDue returns the earliest runAt of a PENDING or RETRY_WAIT task
	// of any unpaused PUSH queue (pull tasks wait for workers, paused queues
	// for a resume, not for the dispatcher) and the earliest lease expiry of a RUNNING task of any
	// queue; each is 0 when there is none.
	TaskNextDue(ctx context.Context) (runAt int64, leaseExpiry int64, err error)
	// TaskDueQueues returns the unpaused push queues, of every instance,
	// whose earliest PENDING or RETRY_WAIT task has a runAt at or before
	// now: the queues a dispatcher pass may claim from, found in one read
	// instead of one per queue.
	TaskDueQueues(ctx context.Context, now int64) ([]QueueRef, error)
	// TaskNextDueAfter returns the earliest runAt later than after of a
	// PENDING or RETRY_WAIT task of any unpaused push queue, or 0: when
	// tasks are due but held back (a cap, a rate, a function no worker here
	// serves), the dispatcher still wakes for the next one that comes due.
	TaskNextDueAfter(ctx context.Context, after int64) (int64, error)
	// TaskQueueNextRunAt returns the earliest runAt after after of a
	// PENDING or RETRY_WAIT task of one queue, or 0: a long-polling lease
	// of a pull queue that claimed nothing at after waits for it as well
	// as for a change.
	TaskQueueNextRunAt(ctx context.Context, ref QueueRef, after int64) (int64, error)
	// TaskBacklog returns, per mode of the unpaused queues of every
	// instance, how many PENDING or RETRY_WAIT tasks have a runAt at or
	// before now (counting at most limit a queue: a walk of that many
	// entries of its due index) and the earliest runAt
	// among them: the work due and not started, for /metrics. A mode
	// without such a task is left out.
	TaskBacklog(ctx context.Context, now int64, limit int) ([]Backlog, error)
	// WorkersPut replaces p.Node's rows of the workers table (the
	// functions its connected workers serve) in one transaction, and
	// removes every node's rows not seen since p.Forget.
	WorkersPut(ctx context.Context, p *WorkersPutParams) error
	// WorkersServed returns the functions served for p.InstanceID (and for
	// AllInstances) by nodes seen after p.SeenAfter, with their slots
	// summed over the nodes.
	WorkersServed(ctx context.Context, p *WorkersServedParams) (map[string]int, error)

	// TaskDeleteFinished removes up to limit finished tasks (SUCCEEDED,
	// FAILED, CANCELLED) whose FinishedAt is older than their instance's
	// retentionDays at now, and never an unfinished one. It returns how many.
	TaskDeleteFinished(ctx context.Context, now int64, limit int) (int, error)
}

// Backlog is the work due and not started in the unpaused queues of one
// mode, across the store.
type Backlog struct {
	Mode task.Mode
	// Due is how many tasks are due (each queue counted up to the read's
	// limit).
	Due int
	// OldestRunAt is the earliest runAt of a due task (Unix ms).
	OldestRunAt int64
}

// InstanceRef names an instance: an organization's instance by name.
type InstanceRef struct {
	Org  string
	Name string
}

// QueueRef names a queue of an instance.
type QueueRef struct {
	InstanceID string
	Name       string
}

// TaskRef names a task of an instance.
type TaskRef struct {
	InstanceID string
	ID         string
}

// KeyRef names an API key of an organization by its public id.
type KeyRef struct {
	Org string
	ID  string
}

// AddResult is the outcome of one task of a TaskAdd.
type AddResult struct {
	Task *task.Task  // the stored task (on success)
	Err  *task.Error // TASK_EXISTS with ID set to the existing task's id
}

// ListParams selects one page of a queue's tasks.
//
// Order: with State set to PENDING, RUNNING or RETRY_WAIT, soonest runAt
// first; with a finished state, latest FinishedAt first; with no state, newest
// CreatedAt first. Ties break by ID in the same direction.
type ListParams struct {
	InstanceID string
	Queue      string
	State      task.State // "" for every state
	// Pull narrows RUNNING to leased (true) or running (false); nil for both.
	// Since a queue's mode is fixed, backends may ignore it when the queue's
	// mode already answers it.
	Pull   *bool
	Name   string // exact name, "" for any
	Limit  int    // 1–200
	Cursor string // opaque, from the previous page; "" for the first
}

// ListPage is one page of tasks; Cursor is "" on the last page.
type ListPage struct {
	Tasks  []*task.Task
	Cursor string
}

// ClaimParams selects the due tasks of one queue to claim.
type ClaimParams struct {
	Queue *task.Queue // the queue as the engine sees it (policy for Claim)
	Now   int64
	Limit int
	// LeaseMs is how long each claim holds (pull: leaseSeconds; push: the
	// deadline plus a grace).
	LeaseMs int64
	// NewLeaseID makes a lease id for each claimed task.
	NewLeaseID func() string
	// The limits below are kept by the store, inside the claim's
	// transaction, so that they hold across every node sharing it.
	//
	// MaxRunning caps the queue's RUNNING tasks, the claimed ones included
	// (maxConcurrent); 0 for no cap.
	MaxRunning int
	// InstanceMaxRunning caps the RUNNING tasks of all push queues of the
	// instance (maxInFlight); 0 for no cap.
	InstanceMaxRunning int
	// Rate, when above 0, is the queue's ratePerSecond: a token bucket kept
	// with the queue, at most Burst tokens and full when first used, refills
	// at Rate per second of Now and pays one token per claimed task.
	Rate  float64
	Burst int
	// Due says the caller has just found a task of this queue due
	// (TaskDueQueues): a backend may then skip its own check that anything
	// is due before it opens the claim's transaction.
	Due bool
	// Functions, when not nil, routes function targets: a task whose
	// attempt goes to a function (FunctionOf) is claimed only while
	// Functions gives that function a free slot here, at most that many;
	// tasks of other targets are claimed as usual. A task past its queue's
	// maxAgeSeconds is claimed whatever its function, so that its attempt
	// ends it. nil claims every due task.
	Functions map[string]int
	// MaxBytes, when above 0, bounds the claimed tasks' payloads and
	// params together: tasks are kept in claim order while they fit, the
	// first always (a pull lease's answer, as Cloud Tasks bounds
	// LeaseTasks'). The rest stay due, untouched.
	MaxBytes int
}

// LeaseRef names one attempt in flight: a task and the lease it holds.
type LeaseRef struct {
	InstanceID string
	ID         string
	LeaseID    string
}

// FinishParams is one attempt's outcome to store: Task is the task as
// task.Finish left it (or as Extend left it), LeaseID the lease it held when
// claimed.
type FinishParams struct {
	Task       *task.Task
	LeaseID    string
	DeadLetter *task.Task // a dead-letter copy to add, or nil
	// LiveAt, when not 0, fences the write on the lease's expiry as well:
	// it applies only while the stored lease_expires_at is after LiveAt
	// (the lease is still live at that time, as task.CheckLease would say
	// of the stored row). A pull worker's ack or release sets it to the
	// time it was checked at, so that a lease shortened or run out since
	// (through another node, or while the write waited) is refused
	// LEASE_LOST rather than finished. 0 checks only the lease id.
	LiveAt int64
}

// LiveAfter is the expiry bound of p's write: the stored lease must expire
// after it. It is p.LiveAt, or the lowest int64 when LiveAt is 0, which
// every lease passes.
func (p *FinishParams) LiveAfter() int64 {
	if p.LiveAt == 0 {
		return math.MinInt64
	}
	return p.LiveAt
}

// KeyStore keeps API keys. Only a key's SHA-256 digest is stored; the secret
// is shown once, when it is made, and never again.
type KeyStore interface {
	// KeyCreate stores a new key.
	KeyCreate(ctx context.Context, k *APIKey) error
	// KeyByDigest finds an unrevoked or revoked key by the SHA-256 digest of
	// its secret (exact match); task.ErrNotFound if none.
	KeyByDigest(ctx context.Context, digest []byte) (*APIKey, error)
	// KeyGet finds an organization's key, revoked or not, by its public
	// id; task.ErrNotFound if org has none of that id.
	KeyGet(ctx context.Context, ref KeyRef) (*APIKey, error)
	// KeyList lists an organization's keys, oldest first; org "" lists every
	// organization's (the operator's view).
	KeyList(ctx context.Context, org string) ([]*APIKey, error)
	// KeyRevoke marks a key revoked at now; task.ErrNotFound if org has no
	// such key. Revoking twice keeps the first time.
	KeyRevoke(ctx context.Context, ref KeyRef, now int64) error
	// KeyCount counts every key, revoked ones included.
	KeyCount(ctx context.Context) (int, error)
}

// APIKey is a stored API key.
type APIKey struct {
	ID        string // public id, shown by `errand keys list`
	Org       string
	Digest    []byte // SHA-256 of the whole secret
	Prefix    string // the first characters of the secret, for recognition
	Grants    []Grant
	CreatedAt int64
	RevokedAt int64 // 0 while valid
}

// Revoked reports whether the key admits nothing any more.
func (k *APIKey) Revoked() bool { return k.RevokedAt != 0 }

// KeyGone reports whether a read of a key (key, err) says it admits
// nothing: it was deleted or revoked. Another error says nothing.
func KeyGone(key *APIKey, err error) bool {
	return task.IsCode(err, task.CodeNotFound) || (err == nil && key.Revoked())
}

// Grant is one role on one instance name ("*" for every instance).
type Grant struct {
	Instance string
	Role     string // read, write or full
}

// Notifier is implemented by a store that several nodes share: Notify tells
// every node listening that tasks or queues changed, so that a node wakes
// for work another node wrote. A lost notification only delays work until
// the services' backstop.
type Notifier interface {
	// Notify tells the other nodes that tasks or queues changed, as c
	// says what changed. The store's own Listen need not pass it on: the
	// engine that sends it has woken its own services for the change.
	Notify(ctx context.Context, c Change) error
	// NotifyConfig tells every node listening that instances, queues or
	// API keys changed, so that each drops its cached copies of them (the
	// engine's cache; a lost one is stale for at most the cache's
	// lifetime).
	NotifyConfig(ctx context.Context) error
	// Listen calls fn for every notification, HeardConfig for
	// NotifyConfig's, and once after each (re)connect with HeardConnect
	// (notifications may have been missed meanwhile), until ctx ends; it
	// reconnects by itself.
	Listen(ctx context.Context, fn func(Heard)) error
}

// Change is what a Notifier's Notify announces.
type Change int

const (
	// ChangeAny is any change of tasks or queues: every service of a node
	// may have work.
	ChangeAny Change = iota
	// ChangeWaiters is tasks added that no other node's dispatcher need
	// look for (added to pull queues, or to push queues whose adding node
	// delivers them itself) and nothing else: only the other nodes' long
	// polls and the console's watchers (which share their waker) have
	// anything new; their dispatchers, rescuers and schedulers do not.
	ChangeWaiters
	// ChangeFunctions is tasks added whose target is a function, and
	// nothing else: a node that serves no function (no connected worker,
	// no in-process handler) claims none of them, so only its waiters need
	// it; one that serves any takes it as ChangeAny.
	ChangeFunctions
)

// Heard is what a Notifier's Listen heard.
type Heard int

const (
	// HeardChange is another node's Notify (or the notification of an
	// application's transaction that added tasks): tasks or queues changed.
	HeardChange Heard = iota
	// HeardConfig is a NotifyConfig, this node's own or another's.
	HeardConfig
	// HeardConnect is a (re)connect of the LISTEN: anything may have
	// changed meanwhile, the configuration too.
	HeardConnect
	// HeardWaiters is another node's Notify of ChangeWaiters: tasks were
	// added for the long polls and watchers alone.
	HeardWaiters
	// HeardFunctions is another node's Notify of ChangeFunctions: tasks
	// whose target is a function were added.
	HeardFunctions
)

// Config reports whether h may follow a configuration change: cached
// copies of instances, queues and keys are dropped.
func (h Heard) Config() bool { return h == HeardConfig || h == HeardConnect }

// StatsKeeper is implemented by a store whose query planner plans from
// statistics of the tasks table that the database refreshes on a timing of
// its own (PostgreSQL's autovacuum): without them, a table that grew from
// empty to a large backlog before its first ANALYZE can be read through the
// wrong index by the dispatcher's hot queries. RefreshStats takes the
// statistics again when the table has none yet or holds more than twice
// the rows they counted, and reports whether it did; it is cheap otherwise
// (one catalog read), and one node at a time does it.
type StatsKeeper interface {
	RefreshStats(ctx context.Context) (bool, error)
}

// Vacuumer is implemented by a store whose tables keep the dead row
// versions of updates until a vacuum that the database runs on a timing
// of its own (PostgreSQL's autovacuum): until then the claims and reads of
// the due and running tasks walk the index entries those versions left.
// VacuumTasks vacuums the tasks table when enough of it is dead, and
// reports whether it ran and whether it left the table below that mark; it
// is cheap otherwise (one catalog read), and one node at a time does it.
type Vacuumer interface {
	VacuumTasks(ctx context.Context) (ran, cleared bool, err error)
}

// ServerClock is implemented by a store with a clock of its own
// (PostgreSQL's now()): nodes that set their engine's clock by it agree on
// lease expiries and deadlines even when their own clocks drift.
type ServerClock interface {
	ServerNow(ctx context.Context) (time.Time, error)
}

// AddClaimer is implemented by a store that can claim in an add's own
// transaction. On PostgreSQL, whose commits are dear (each waits for its
// WAL flush, and each round trip after an idle pause for the server's
// wake-up), a task added to an idle push queue then waits for one commit
// before its delivery, not for the add's and then the claim's; on SQLite,
// whose one writer pays for every row written, a task the claim takes is
// inserted RUNNING instead of inserted and then rewritten.
type AddClaimer interface {
	// TaskAddClaim is TaskAdd of tasks followed, in the same transaction,
	// by TaskClaim(p): the claim sees the tasks just added, keeps every
	// limit TaskClaim keeps, and takes p.Queue's due tasks in the same
	// order. It returns TaskAdd's results and the tasks claimed. Tasks it
	// does not claim with (not all of p.Queue, named, more than a small
	// batch, or meeting a taken id) are added by TaskAdd alone, and then it
	// claims none: the caller's dispatcher claims them as any other.
	TaskAddClaim(ctx context.Context, tasks []*task.Task, p *ClaimParams) ([]AddResult, []*task.Task, error)
}
