package store

import (
	"context"

	"github.com/errandhq/errand/internal/task"
)

// TriggerStore keeps trigger rules and the chain outbox.
//
// Task rules fire from inside TaskFinish: the transaction that stores a
// task's SUCCEEDED or FAILED also writes one TriggerEvent for every enabled
// task rule watching its queue for that outcome, so a finish and its chain
// event are stored together or not at all. The engine drains the events
// (TriggerEventsEnd): a node that dies between the finish
// and the chained add leaves the event for any node to add.
//
// Deleting a queue deletes the rules that add to it or watch it, in the
// same transaction (and so does deleting an instance, with its queues).
type TriggerStore interface {
	// TriggerCreate stores a new rule (its ID set by the caller). It does
	// not check the queues: the engine does.
	TriggerCreate(ctx context.Context, p *TriggerCreateParams) error
	// TriggerGet finds one rule of an instance.
	TriggerGet(ctx context.Context, ref TriggerRef) (*task.Trigger, error)
	// TriggerGetHook finds a hook rule by its token (the {hook} of
	// /v1/hooks/{instance}/{hook}), whatever its instance: the token is
	// unique across instances, like an API key's digest.
	TriggerGetHook(ctx context.Context, ref HookRef) (*task.Trigger, error)
	// TriggerList lists an instance's rules, oldest first.
	TriggerList(ctx context.Context, p *TriggerListParams) ([]*task.Trigger, error)
	// TriggerUpdate applies fn to a rule under a write lock and stores what
	// fn left (InstanceID, ID, Kind, CreatedAt and HookToken are kept). fn's
	// error is returned unchanged and nothing is written.
	TriggerUpdate(ctx context.Context, ref TriggerRef, fn func(*task.Trigger) error) (*task.Trigger, error)
	// TriggerDelete removes a rule and its pending chain events.
	TriggerDelete(ctx context.Context, ref TriggerRef) error

	// TriggerDue returns up to p.Limit enabled schedule rules of every
	// instance whose NextTickAt is at or before p.Now, soonest first.
	TriggerDue(ctx context.Context, p *TriggerDueParams) ([]*task.Trigger, error)
	// TriggerNextTick returns the earliest NextTickAt of an enabled schedule
	// rule of any instance, 0 when there is none.
	TriggerNextTick(ctx context.Context) (int64, error)
	// TriggerFire records ticks of schedule rules (each rule at most once)
	// in one transaction and returns one result per fire, in order. A fire
	// applies only while its rule is enabled with NextTickAt equal to
	// p.ExpectNext (so two nodes firing the same tick apply once): it adds
	// p.Task (a task already named by its tick) and moves the rule to
	// p.Tick and p.Next; a task whose name is taken counts as added (a
	// retry of the same tick), a queue that is gone records the refusal on
	// the rule, as p.Err does when p.Task is nil.
	TriggerFire(ctx context.Context, ps []*TriggerFireParams) ([]TriggerFireResult, error)

	// TriggerHookAdd adds each p.Task, a hook call's task, for hook rule
	// p.Ref and counts it on the rule (Fired), all in one transaction, and
	// returns one result per p, in order. A task whose name is taken (a
	// sender's retry), by a task stored before or by an earlier p of the
	// same call, adds and counts nothing: Added is true and TaskID is the
	// holder's. A queue that is gone is recorded on the rule as its last
	// error (Err) and adds nothing.
	TriggerHookAdd(ctx context.Context, ps []*TriggerHookAddParams) ([]TriggerFireResult, error)

	// TriggerEventList returns up to p.Limit pending chain events of every
	// instance, oldest first.
	TriggerEventList(ctx context.Context, p *TriggerEventListParams) ([]*TriggerEvent, error)
	// TriggerEventsEnd ends up to p.Limit of the oldest pending chain
	// events that no other call is ending, and returns one result per event
	// it read, in order (none when nothing is pending). It calls p.Plan with
	// the events (Plan reads what it needs through the store and returns,
	// per event, the task to add or the refusal to record), then in one
	// transaction removes each event still pending and, for each it
	// removed, adds the task and records the outcome on the rule (Fired, or
	// the refusal as its last error). An event another call removed first
	// is not Applied and adds nothing. On PostgreSQL the events are read
	// and locked in that transaction (SKIP LOCKED), so nodes draining at
	// once take different events. Plan's error is returned unchanged and
	// nothing is written.
	TriggerEventsEnd(ctx context.Context, p *TriggerEventsEndParams) ([]TriggerFireResult, error)
	// TriggerEventBacklog counts the pending chain events of every
	// instance, the oldest limit of them at most, and the earliest finish
	// among those counted (0 when none is pending).
	TriggerEventBacklog(ctx context.Context, limit int) (*EventBacklog, error)
	// TriggerEventAdd stores chain events of one instance (a restored
	// archive's pending ones) as its finishes would have: an event whose
	// task, rule and finish time are stored already is left as it is.
	// Seq is the store's own.
	TriggerEventAdd(ctx context.Context, p *TriggerEventAddParams) error
}

// EventBacklog is the chain outbox's size: events waiting for the
// chainers.
type EventBacklog struct {
	Pending          int
	OldestFinishedAt int64 // Unix ms; 0 when none is pending
}

// TriggerEventAddParams holds chain events to store for one instance.
type TriggerEventAddParams struct {
	InstanceID string
	Events     []*TriggerEvent
}

// TriggerRef names one rule of an instance.
type TriggerRef struct {
	InstanceID string
	ID         string
}

// HookRef names a hook rule by its token.
type HookRef struct {
	Token string
}

// TriggerCreateParams holds a rule to store.
type TriggerCreateParams struct {
	Trigger *task.Trigger
}

// TriggerListParams selects an instance's rules.
type TriggerListParams struct {
	InstanceID string
}

// TriggerDueParams selects the schedule rules due at Now.
type TriggerDueParams struct {
	Now   int64
	Limit int
}

// TriggerFireParams is one tick of a schedule rule to record.
type TriggerFireParams struct {
	Ref        TriggerRef
	ExpectNext int64      // the NextTickAt the rule was read with
	Tick       int64      // the tick fired: the rule's new LastTickAt
	Next       int64      // the tick after it: the rule's new NextTickAt
	Task       *task.Task // the tick's task, or nil when Err says why not
	Err        string     // the refusal to record when Task is nil
	Now        int64
}

// TriggerFireResult says what a fire or a chain event did.
type TriggerFireResult struct {
	// Applied is false when another node (or an earlier try) had already
	// fired the tick or ended the event: nothing was written.
	Applied bool
	// Added is true when the task was stored or its name already held a
	// task (then TaskID is that task's id).
	Added  bool
	TaskID string
	// Err is the refusal recorded on the rule ("" for none).
	Err string
}

// TriggerHookAddParams is one hook call's task to add for its rule.
type TriggerHookAddParams struct {
	Ref  TriggerRef
	Task *task.Task
	Now  int64
}

// TriggerEvent is one pending chain event: a task of a watched queue
// finished in State, and rule RuleID is to add a task for it.
type TriggerEvent struct {
	InstanceID string
	Seq        int64
	RuleID     string
	TaskID     string
	State      task.State
	FinishedAt int64
}

// TriggerEventListParams selects pending chain events.
type TriggerEventListParams struct {
	Limit int
}

// TriggerEventsEndParams ends a batch of chain events.
type TriggerEventsEndParams struct {
	Limit int
	Now   int64 // when the refusals are recorded; Plan may set it
	// Plan returns one outcome per event, in the order given.
	Plan func(ctx context.Context, evs []*TriggerEvent) ([]TriggerEventOutcome, error)
}

// TriggerEventOutcome is what ending one chain event adds: its chained
// task, or nil with Err saying why (neither: the rule is gone, and the
// event goes with nothing added or recorded).
type TriggerEventOutcome struct {
	Task *task.Task
	Err  string
}

// PlanEvents calls p.Plan with evs and checks that it returned one
// outcome per event; the stores call it.
func PlanEvents(ctx context.Context, p *TriggerEventsEndParams, evs []*TriggerEvent) ([]TriggerEventOutcome, error) {
	outs, err := p.Plan(ctx, evs)
	if err != nil {
		return nil, err
	}
	if len(outs) != len(evs) {
		return nil, task.Errorf(task.CodeInternal, "store: %d outcomes planned for %d chain events", len(outs), len(evs))
	}
	return outs, nil
}
