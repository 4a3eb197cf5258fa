package postgres

import (
	"context"
	"errors"
)

// vacuumMinDead and vacuumDeadShare are when VacuumTasks vacuums: once the
// table's dead row versions number at least vacuumMinDead and at least
// vacuumDeadShare of its live rows. Each task leaves two dead versions
// (its claim and its finish) and, in the state indexes, two entries that
// only a vacuum removes (see VacuumTasks).
const (
	vacuumMinDead   = 10_000
	vacuumDeadShare = 0.05
)

// vacuumLockClass is the first half of the advisory lock (a session's)
// that lets one node at a time vacuum; the second is the tasks table's oid.
const vacuumLockClass = 0x65727675 // "ervu"

// sqlVacuumDue says whether tasks has dead versions past the thresholds
// and no VACUUM or ANALYZE is at work on it (a VACUUM would skip it, and
// the server log a warning each time), whether this role may vacuum it
// (its owner, a member of the owner's role, or a superuser: VACUUM by
// anyone else only warns and does nothing), and how many vacuums it had.
const sqlVacuumDue = `SELECT coalesce(s.n_dead_tup >= greatest($1::bigint, $2::float8 * s.n_live_tup), false)
		AND NOT EXISTS (SELECT FROM pg_stat_progress_vacuum AS v WHERE v.relid = c.oid)
		AND NOT EXISTS (SELECT FROM pg_stat_progress_analyze AS a WHERE a.relid = c.oid),
		pg_has_role(c.relowner, 'USAGE'), coalesce(s.vacuum_count + s.autovacuum_count, 0)
	FROM pg_class AS c LEFT JOIN pg_stat_user_tables AS s ON s.relid = c.oid
	WHERE c.oid = 'tasks'::regclass`

// VacuumTasks vacuums tasks when its dead row versions are past
// vacuumMinDead and vacuumDeadShare of its rows, under an advisory lock
// that a node already doing it holds (the others skip), and reports
// whether the table was vacuumed (the VACUUM skips it while an autovacuum
// or an ANALYZE holds it: then not) and whether it is now below the
// thresholds (a transaction elsewhere keeps what died after its snapshot).
//
// Why: a claim and a finish each leave the row's old version dead and its
// entry in tasks_due (or tasks_running) behind. New entries land at those
// indexes' right end, so nothing reclaims the pages at their front but a
// vacuum; until then every claim, every read of the due queues and every
// count of the RUNNING rows walks them from the front. Autovacuum visits a
// database once per autovacuum_naptime (a minute): measured in a 40 s
// steady window of a fresh database, tasks_due grew from 620 to 4,519
// pages and the due queues' read from 2.5 ms to 28 ms; an in-process
// burn-down of 300,000 tasks ran 14–20% faster with a VACUUM every 2 s.
func (s *Store) VacuumTasks(ctx context.Context) (ran, cleared bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, false, interpretError(err)
	}
	defer conn.Release()
	// The check first, on its own: most seconds nothing is due, and the
	// lock below is taken and given back only when something is.
	var due, owner bool
	var before int64
	if err := conn.QueryRow(ctx, sqlVacuumDue, vacuumMinDead, vacuumDeadShare).Scan(&due, &owner, &before); err != nil {
		return false, false, interpretError(err)
	}
	if !due {
		return false, true, nil
	}
	if !owner {
		return false, false, errors.New("postgres: vacuuming tasks needs its owner's role (the one that migrated the schema)")
	}
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1::int4, 'tasks'::regclass::oid::int4)`,
		vacuumLockClass).Scan(&locked); err != nil || !locked {
		return false, false, interpretError(err)
	}
	defer func() {
		// A session's lock outlives a failed statement: release it, on a
		// context of its own (ctx may be what failed).
		uctx, cancel := context.WithTimeout(context.Background(), rollbackTimeout)
		defer cancel()
		if _, uerr := conn.Exec(uctx, `SELECT pg_advisory_unlock($1::int4, 'tasks'::regclass::oid::int4)`, vacuumLockClass); uerr != nil {
			conn.Conn().Close(uctx) // the pool then drops it, and the lock with it
		}
	}()
	// VACUUM runs outside a transaction: the session's statement timeout
	// (30 s) is lifted for it alone, and then set back to what it was (not
	// RESET: that would go back to the server's default, as the session's
	// timeout is SET after connecting, not a startup parameter:
	// sessionSets). SKIP_LOCKED: an autovacuum (or a migration) at work on
	// the table is left to it. TRUNCATE false: giving empty pages at the
	// table's end back to the file system takes a lock that would stop
	// every claim meanwhile.
	var timeout string
	if err := conn.QueryRow(ctx, `SELECT current_setting('statement_timeout'),
		set_config('statement_timeout', '`+bulkStatementTimeout+`', false)`).Scan(&timeout, new(string)); err != nil {
		return false, false, interpretError(err)
	}
	_, verr := conn.Exec(ctx, `VACUUM (SKIP_LOCKED, TRUNCATE false) tasks`)
	if _, err := conn.Exec(ctx, `SELECT set_config('statement_timeout', $1, false)`, timeout); err != nil {
		// A connection that cannot be set back is dropped, not handed
		// out again with the vacuum's timeout.
		conn.Conn().Close(context.WithoutCancel(ctx))
		if verr == nil {
			verr = err
		}
	}
	if verr != nil {
		return false, false, interpretError(verr)
	}
	// The same reading again: what is left, and whether a vacuum ran.
	var left bool
	var after int64
	if err := conn.QueryRow(ctx, sqlVacuumDue, vacuumMinDead, vacuumDeadShare).Scan(&left, &owner, &after); err != nil {
		return false, false, interpretError(err)
	}
	if after == before {
		return false, false, nil // skipped: the table was held
	}
	return true, !left, nil
}
