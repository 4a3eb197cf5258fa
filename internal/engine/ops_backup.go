package engine

import (
	"context"
	"errors"
)

func (e *Engine) runInstanceBackup(ctx context.Context, j *opsRun) (any, error) {
	return nil, errors.New("instance.backup: not built yet")
}
