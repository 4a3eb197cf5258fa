package engine

import (
	"context"
)

// runBackupExport produces the owner's configuration bundle as the job's
// result (at most 64 KiB, as every result; ExportBundle has no cap).
func (e *Engine) runBackupExport(ctx context.Context, j *opsRun) (any, error) {
	b, err := e.ExportBundle(ctx, j.owner)
	if err != nil {
		return nil, err
	}
	return b, nil
}
