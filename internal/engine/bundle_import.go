package engine

import (
	"context"
	"fmt"
	"reflect"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// ModeChangeError refuses importing queue j of instance i of a bundle over
// an existing queue of another mode.
func ModeChangeError(i, j int, instance, queue string, was task.Mode) error {
	return task.FieldErrorf(task.CodeInvalidArgument, fmt.Sprintf("instances[%d].queues[%d].mode", i, j),
		"queue %s/%s exists as a %s queue; a queue's mode cannot change", instance, queue, was)
}

// ImportReport says what an import did, each item named "instance NAME",
// "settings NAME", "queue NAME/QUEUE" or "trigger NAME/ID". Notes say what
// the operator must still do (a hook rule waiting for its secret).
type ImportReport struct {
	Created []string `json:"created"`
	Changed []string `json:"changed"`
	Left    []string `json:"left"`
	Notes   []string `json:"notes,omitempty"`
}

// ImportBundle loads a bundle into org: missing instances, queues and
// trigger rules are created (a rule with its id; PlanTrigger says what
// becomes of a hook), settings that differ are changed, and what already
// matches is left. Running it again changes nothing. The whole bundle is
// checked before anything is written, so a refused import changes nothing;
// an instance, queue or rule of org that the bundle does not name is left
// alone.
func (e *Engine) ImportBundle(ctx context.Context, org string, b *Bundle) (*ImportReport, error) {
	if err := b.Check(e.rules); err != nil {
		return nil, err
	}
	// No existing queue may change mode, nor an existing rule kind.
	for i, bi := range b.Instances {
		inst, err := e.store.InstanceGet(ctx, store.InstanceRef{Org: org, Name: bi.Name})
		if err != nil {
			continue
		}
		for j, bq := range bi.Queues {
			if old, err := e.store.QueueGet(ctx, store.QueueRef{InstanceID: inst.ID, Name: bq.Name}); err == nil && old.Mode != bq.Mode {
				return nil, ModeChangeError(i, j, bi.Name, bq.Name, old.Mode)
			}
		}
		for _, bt := range bi.Triggers {
			if cur, err := e.store.TriggerGet(ctx, store.TriggerRef{InstanceID: inst.ID, ID: bt.ID}); err == nil {
				c := bundleTrigger(cur, bi.Name)
				if _, err := PlanTrigger(bi.Name, bt, &c); err != nil {
					return nil, err
				}
			}
		}
	}
	rep := &ImportReport{Created: []string{}, Changed: []string{}, Left: []string{}}
	for _, bi := range b.Instances {
		if err := e.importInstance(ctx, org, bi, rep); err != nil {
			return rep, err
		}
	}
	e.changed()
	return rep, nil
}

func (e *Engine) importInstance(ctx context.Context, org string, bi BundleInstance, rep *ImportReport) error {
	inst, err := e.store.InstanceGet(ctx, store.InstanceRef{Org: org, Name: bi.Name})
	if task.IsCode(err, task.CodeNotFound) {
		inst, err = e.InstanceCreate(ctx, org, bi.Name)
		if err == nil {
			rep.Created = append(rep.Created, "instance "+bi.Name)
		}
	} else if err == nil {
		rep.Left = append(rep.Left, "instance "+bi.Name)
	}
	if err != nil {
		return err
	}
	if BundleSettings(inst.Settings) != bi.Settings {
		if _, err := e.store.InstanceUpdate(ctx, store.InstanceRef{Org: org, Name: bi.Name}, func(i *task.Instance) error {
			return settingsPatch(bi.Settings).Apply(&i.Settings)
		}); err != nil {
			return err
		}
		rep.Changed = append(rep.Changed, "settings "+bi.Name)
	} else {
		rep.Left = append(rep.Left, "settings "+bi.Name)
	}
	// Queues first without their dead-letter queue, which may be created
	// later in the same import; then the dead-letter queues are set.
	for pass := range 2 {
		for _, bq := range bi.Queues {
			if err := e.importQueue(ctx, inst, bi.Name, bq, pass, rep); err != nil {
				return err
			}
		}
	}
	// Rules last: the queues they name exist now.
	for _, bt := range bi.Triggers {
		if err := e.importTrigger(ctx, org, inst, bt, rep); err != nil {
			return err
		}
	}
	return nil
}

// importTrigger creates, changes or leaves one rule, found by its id.
func (e *Engine) importTrigger(ctx context.Context, org string, inst *task.Instance, bt BundleTrigger, rep *ImportReport) error {
	var cur *BundleTrigger
	old, err := e.store.TriggerGet(ctx, store.TriggerRef{InstanceID: inst.ID, ID: bt.ID})
	if err == nil {
		c := bundleTrigger(old, inst.Name)
		cur = &c
	} else if !task.IsCode(err, task.CodeNotFound) {
		return err
	}
	plan, err := PlanTrigger(inst.Name, bt, cur)
	if err != nil {
		return err
	}
	item := "trigger " + inst.Name + "/" + bt.ID
	switch plan.Action {
	case "created":
		_, err = e.TriggerCreate(ctx, org, inst.Name, plan.Want.patch(true))
		rep.Created = append(rep.Created, item)
	case "changed":
		_, err = e.TriggerPatch(ctx, TriggerRef{Org: org, Instance: inst.Name, ID: bt.ID}, plan.Want.patch(false))
		rep.Changed = append(rep.Changed, item)
	default:
		rep.Left = append(rep.Left, item)
	}
	if plan.Note != "" {
		rep.Notes = append(rep.Notes, plan.Note)
	}
	return err
}

// importQueue creates or updates one queue: pass 0 everything but the
// dead-letter queue, pass 1 the dead-letter queue and the report.
func (e *Engine) importQueue(ctx context.Context, inst *task.Instance, instName string, bq BundleQueue, pass int, rep *ImportReport) error {
	item := "queue " + instName + "/" + bq.Name
	want := bq
	if pass == 0 {
		want.DeadLetterQueue = ""
	}
	old, err := e.store.QueueGet(ctx, store.QueueRef{InstanceID: inst.ID, Name: bq.Name})
	var curTarget *task.Target
	if err == nil {
		curTarget = old.Target
	}
	want, note := want.WithoutHidden(instName, curTarget)
	if note != "" && pass == 1 {
		rep.Notes = append(rep.Notes, note)
	}
	if task.IsCode(err, task.CodeNotFound) {
		q := task.NewQueue(inst.ID, bq.Name, bq.Mode)
		if err := want.patch().Apply(q, true, e.rules); err != nil {
			return err
		}
		q.CreatedAt = e.now()
		if err := e.store.QueueCreate(ctx, q); err != nil {
			return err
		}
		rep.Created = append(rep.Created, item)
		return nil
	}
	if err != nil {
		return err
	}
	cur := bundleQueue(old)
	if pass == 0 {
		want.DeadLetterQueue = cur.DeadLetterQueue // set in pass 1
	}
	if reflect.DeepEqual(cur, want) {
		if pass == 1 && !contains(rep.Created, item) && !contains(rep.Changed, item) {
			rep.Left = append(rep.Left, item)
		}
		return nil
	}
	if _, err := e.store.QueueUpdate(ctx, store.QueueRef{InstanceID: inst.ID, Name: bq.Name}, func(q *task.Queue) error {
		return want.patch().Apply(q, false, e.rules)
	}); err != nil {
		return err
	}
	if !contains(rep.Created, item) && !contains(rep.Changed, item) {
		rep.Changed = append(rep.Changed, item)
	}
	return nil
}

func settingsPatch(s BundleSettings) *task.SettingsPatch {
	var rl *float64
	if s.RateLimit != 0 {
		rl = &s.RateLimit
	}
	return &task.SettingsPatch{RetentionDays: &s.RetentionDays, RateLimit: &rl, MaxInFlight: &s.MaxInFlight}
}

// prefixed puts field before the field an error names.
func prefixed(err error, field string) error {
	te, ok := err.(*task.Error)
	if !ok {
		return err
	}
	c := *te
	c.Field = field + "." + c.Field
	c.Message = field + "." + c.Message
	return &c
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
