package embedded

import (
	"context"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/engine"
)

// CreateTrigger creates a trigger rule of instance from the request the
// client SDK's CreateTrigger sends (POST …/triggers) and answers it as the
// v1 API does: a schedule (River's periodic jobs: a cron expression or
// @every, in a time zone), a hook (a URL on HTTPHandler that adds a task
// for each POST: the answer's Hook.Path) or a task rule (a task added when
// a task of another queue ends). The engine runs schedules and task rules
// itself; a hook's calls arrive through HTTPHandler, mounted where the
// senders can reach it. A request the v1 API refuses is refused with the
// same code, naming the field.
func (e *Engine) CreateTrigger(ctx context.Context, instance string, req errandapi.TriggerRequest) (*errandapi.Trigger, error) {
	if err := e.refuse(); err != nil {
		return nil, err
	}
	tr, err := e.eng.TriggerCreate(ctx, e.org, instance, engine.TriggerPatchOf(&req))
	if err != nil {
		return nil, e.fail(err)
	}
	return engine.TriggerJSON(tr, instance, true), nil
}

// Triggers returns the trigger rules of instance.
func (e *Engine) Triggers(ctx context.Context, instance string) ([]*errandapi.Trigger, error) {
	if err := e.refuse(); err != nil {
		return nil, err
	}
	list, err := e.eng.TriggerList(ctx, e.org, instance)
	if err != nil {
		return nil, e.fail(err)
	}
	out := make([]*errandapi.Trigger, len(list))
	for i, tr := range list {
		out[i] = engine.TriggerJSON(tr, instance, true)
	}
	return out, nil
}

// Trigger returns one trigger rule, with how often it fired and its last
// error.
func (e *Engine) Trigger(ctx context.Context, instance, id string) (*errandapi.Trigger, error) {
	if err := e.refuse(); err != nil {
		return nil, err
	}
	tr, err := e.eng.TriggerGet(ctx, engine.TriggerRef{Org: e.org, Instance: instance, ID: id})
	if err != nil {
		return nil, e.fail(err)
	}
	return engine.TriggerJSON(tr, instance, true), nil
}

// UpdateTrigger changes only what patch sets, as the v1 API's PATCH of a
// rule does (enable or disable it with Enabled), and answers the rule.
func (e *Engine) UpdateTrigger(ctx context.Context, instance, id string, patch errandapi.TriggerRequest) (*errandapi.Trigger, error) {
	if err := e.refuse(); err != nil {
		return nil, err
	}
	tr, err := e.eng.TriggerPatch(ctx, engine.TriggerRef{Org: e.org, Instance: instance, ID: id}, engine.TriggerPatchOf(&patch))
	if err != nil {
		return nil, e.fail(err)
	}
	return engine.TriggerJSON(tr, instance, true), nil
}

// DeleteTrigger removes a trigger rule: it adds nothing more (a hook's URL
// answers NOT_FOUND from then on).
func (e *Engine) DeleteTrigger(ctx context.Context, instance, id string) error {
	if err := e.refuse(); err != nil {
		return err
	}
	return e.fail(e.eng.TriggerDelete(ctx, engine.TriggerRef{Org: e.org, Instance: instance, ID: id}))
}
