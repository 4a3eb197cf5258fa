package postgres

import (
	"context"
)

var (
	// sqlTaskTuples reads the statistics' counts of dead and live row
	// versions in tasks (kept by the server in shared memory; a backend's
	// counts reach them within about a second of its commits).
	sqlTaskTuples = `SELECT coalesce(n_dead_tup, 0), coalesce(n_live_tup, 0)
		FROM pg_stat_user_tables WHERE relid = 'tasks'::regclass`
	// sqlVacuumTasks vacuums tasks unless a vacuum of it is running (its
	// lock is held): another node's, or autovacuum's, does the same work.
	sqlVacuumTasks = `VACUUM (SKIP_LOCKED) tasks`
)

// VacuumTasks vacuums tasks when it holds at least minDead dead row
// versions plus a hundredth of its live ones (store.Vacuumer).
//
// Autovacuum would do the same, but its launcher visits a database about
// once a minute (autovacuum_naptime), a server setting errand does not
// own: under a steady churn of ~10,000 tasks a second, a minute of dead
// entries at the front of tasks_due and tasks_running made every claim
// walk hundreds of index pages more, and with a large table (a backlog of
// a million future tasks) one vacuum also took long enough for the next
// minute's to pile up behind it. A vacuum of tasks scans its heap pages
// that changed since the last one (the visibility map skips the rest, a
// backlog included) and each index once, so vacuuming often keeps each
// vacuum short.
func (s *Store) VacuumTasks(ctx context.Context, minDead int64) (dead int64, ran bool, err error) {
	var live int64
	if err := s.pool.QueryRow(ctx, sqlTaskTuples).Scan(&dead, &live); err != nil {
		return 0, false, interpretError(err)
	}
	if dead < minDead+live/100 {
		return dead, false, nil
	}
	// Without arguments pgx sends the statement by the simple protocol,
	// outside any transaction block, as VACUUM needs.
	if _, err := s.pool.Exec(ctx, sqlVacuumTasks); err != nil {
		return dead, false, interpretError(err)
	}
	return dead, true, nil
}
