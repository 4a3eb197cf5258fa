package embedded

import (
	"context"

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

// Settings change an instance's settings; nil fields stay as they are.
type Settings struct {
	RetentionDays *int
	MaxInFlight   *int // deliveries in flight across the instance's push queues (default 50)
}

// UpdateSettings changes the settings sent.
func (e *Engine) UpdateSettings(ctx context.Context, instance string, s Settings) error {
	if err := e.refuse(); err != nil {
		return err
	}
	_, err := e.eng.SettingsUpdate(ctx, e.org, instance, &task.SettingsPatch{RetentionDays: s.RetentionDays, MaxInFlight: s.MaxInFlight})
	return e.fail(err)
}
