package embedded

import (
	"context"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// CreateInstance creates an instance of the engine's organization.
// INSTANCE_EXISTS if it exists.
func (e *Engine) CreateInstance(ctx context.Context, name string) error {
	if err := e.refuse(); err != nil {
		return err
	}
	_, err := e.eng.InstanceCreate(ctx, e.org, name)
	return e.fail(err)
}

// Instances returns the names of the engine's organization's instances.
func (e *Engine) Instances(ctx context.Context) ([]string, error) {
	if err := e.refuse(); err != nil {
		return nil, err
	}
	list, err := e.eng.InstanceList(ctx, e.org)
	if err != nil {
		return nil, e.fail(err)
	}
	names := make([]string, len(list))
	for i, inst := range list {
		names[i] = inst.Name
	}
	return names, nil
}

// DeleteInstance removes an instance at once with everything in it: its
// queues, tasks, trigger rules and settings (the v1 API's DELETE
// /v1/instances/{instance}). NOT_FOUND if it does not exist.
func (e *Engine) DeleteInstance(ctx context.Context, name string) error {
	if err := e.refuse(); err != nil {
		return err
	}
	return e.fail(e.eng.InstanceDelete(ctx, e.org, name))
}

// InstanceSettings returns an instance's settings as the v1 API answers
// them (GET …/settings): retentionDays, maxInFlight and rateLimit (nil for
// none).
func (e *Engine) InstanceSettings(ctx context.Context, instance string) (*errandapi.Settings, error) {
	if err := e.refuse(); err != nil {
		return nil, err
	}
	inst, err := e.eng.Instance(ctx, e.org, instance)
	if err != nil {
		return nil, e.fail(err)
	}
	out := engine.SettingsJSON(inst.Settings).Settings
	return &out, nil
}

// Settings change an instance's settings; nil fields stay as they are.
type Settings struct {
	RetentionDays *int
	MaxInFlight   *int // deliveries in flight across the instance's push queues (default 50)
	// RateLimit is the instance's v1 API calls a second through
	// HTTPHandler (0.01–1,000,000; past it 429 RATE_LIMITED); 0 removes
	// the limit, as the API's null does. HTTPHandler reads the setting
	// again a second after it last did, so a change made here applies to
	// its calls within a second. The engine's own methods are not limited.
	RateLimit *float64
}

// UpdateSettings changes the settings sent.
func (e *Engine) UpdateSettings(ctx context.Context, instance string, s Settings) error {
	if err := e.refuse(); err != nil {
		return err
	}
	p := &task.SettingsPatch{RetentionDays: s.RetentionDays, MaxInFlight: s.MaxInFlight}
	if s.RateLimit != nil {
		limit := s.RateLimit
		if *limit == 0 {
			limit = nil
		}
		p.RateLimit = &limit
	}
	_, err := e.eng.SettingsUpdate(ctx, e.org, instance, p)
	return e.fail(err)
}
