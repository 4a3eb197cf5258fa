package engine

import (
	"context"

	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// InstanceList lists org's instances.
// The operations instance is not listed.
func (e *Engine) InstanceList(ctx context.Context, org string) ([]*task.Instance, error) {
	insts, err := e.store.InstanceList(ctx, org)
	return withoutOps(insts), err
}

// InstanceCreate creates an instance with its default queue and a fresh
// webhook key.
func (e *Engine) InstanceCreate(ctx context.Context, org, name string) (*task.Instance, error) {
	if err := task.ValidateQueueName(name, "name"); err != nil {
		return nil, err
	}
	inst := &task.Instance{
		ID:         e.newID(),
		Org:        org,
		Name:       name,
		CreatedAt:  e.now(),
		Settings:   task.DefaultSettings(),
		WebhookKey: id.WebhookKey(),
	}
	if err := e.store.InstanceCreate(ctx, inst); err != nil {
		return nil, err
	}
	e.changed()
	return inst, nil
}

// InstanceDelete removes an instance with everything in it.
func (e *Engine) InstanceDelete(ctx context.Context, org, name string) error {
	if task.IsReservedInstance(name) {
		return task.ErrNotFound
	}
	ref := store.InstanceRef{Org: org, Name: name}
	inst, err := e.store.InstanceGet(ctx, ref)
	if err != nil {
		return task.NamedInstance(err, name)
	}
	if err := e.store.InstanceDelete(ctx, ref); err != nil {
		return task.NamedInstance(err, name)
	}
	e.InstanceGone(inst.ID)
	e.changed()
	return nil
}

// InstanceGone ends what this node holds open for an instance that was
// deleted: its channels' subscriptions (each told the instance is gone)
// and, through Config.InstanceDeleted, its function workers'
// connections. Deletes through this engine call it; the node calls it for
// an instance it finds deleted by another node (SubscribedInstances, and
// the instances its workers serve).
func (e *Engine) InstanceGone(instanceID string) {
	e.hub.EndInstance(instanceID)
	if e.instanceDeleted != nil {
		e.instanceDeleted(instanceID)
	}
}

// SubscribedInstances returns the ids of the instances whose channels have
// subscribers on this node.
func (e *Engine) SubscribedInstances() []string { return e.hub.Instances() }

// noCreateKey marks a context whose request may not create an instance.
type noCreateKey struct{}

// WithoutCreate marks ctx as a request that creates no instance on first
// use: a browser's cross-site GET in dev, by which any page the user
// visits could otherwise make instances (an <img> pointing at errand).
func WithoutCreate(ctx context.Context) context.Context {
	return context.WithValue(ctx, noCreateKey{}, true)
}

// Instance finds org's instance; in dev mode a missing one is created
// (unless ctx is WithoutCreate). The operations instance is not found this
// way.
func (e *Engine) Instance(ctx context.Context, org, name string) (*task.Instance, error) {
	if task.IsReservedInstance(name) {
		return nil, task.ErrNotFound
	}
	inst, err := e.store.InstanceGet(ctx, store.InstanceRef{Org: org, Name: name})
	if err == nil || !e.dev || !task.IsCode(err, task.CodeNotFound) || ctx.Value(noCreateKey{}) != nil {
		return inst, task.NamedInstance(err, name)
	}
	if err := task.ValidateQueueName(name, "instance"); err != nil {
		return nil, task.InstanceNotFound(name)
	}
	inst, err = e.InstanceCreate(ctx, org, name)
	if task.IsCode(err, task.CodeInstanceExists) { // a concurrent first use
		return e.store.InstanceGet(ctx, store.InstanceRef{Org: org, Name: name})
	}
	return inst, err
}

// SettingsUpdate applies a settings patch.
func (e *Engine) SettingsUpdate(ctx context.Context, org, name string, p *task.SettingsPatch) (*task.Instance, error) {
	if _, err := e.Instance(ctx, org, name); err != nil {
		return nil, err
	}
	return e.store.InstanceUpdate(ctx, store.InstanceRef{Org: org, Name: name}, func(inst *task.Instance) error { return p.Apply(&inst.Settings) })
}

// WebhookKeyRotate replaces the instance's signing key; the next delivery
// uses the new one.
func (e *Engine) WebhookKeyRotate(ctx context.Context, org, name string) (*task.Instance, error) {
	if _, err := e.Instance(ctx, org, name); err != nil {
		return nil, err
	}
	return e.store.InstanceUpdate(ctx, store.InstanceRef{Org: org, Name: name}, func(inst *task.Instance) error {
		inst.WebhookKey = id.WebhookKey()
		return nil
	})
}
