package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// statsMinBytes is the size below which the tasks table is left to
// autovacuum's ANALYZE: read through any index, a table this small costs
// little, and ANALYZE at each of its first doublings would run often.
const statsMinBytes = 1 << 20

// statsLockClass is the first half of the advisory lock (a
// transaction's) that lets one node at a time check and refresh the
// statistics; the second is the tasks table's oid, so that stores in other
// schemas of the database do not share it.
const statsLockClass = 0x65727374 // "erst"

// sqlStatsLock takes the statistics' lock if no one holds it.
const sqlStatsLock = `SELECT pg_try_advisory_xact_lock($1::int4, 'tasks'::regclass::oid::int4)`

// statsTarget is the statistics target of errand's own ANALYZE
// (default_statistics_target for its transaction; PostgreSQL's default is
// 100): it samples 300 × statsTarget rows. Ten gives the planner what the
// dispatcher's queries need (the rows of each queue and state, the spread
// of run_at) from 3,000 rows, in about a tenth of the time of the default
// (measured on 1.6M rows: 15 ms against 170); autovacuum's own ANALYZE
// later refines them at the server's target.
const statsTarget = 10

// sqlStatsStale says whether tasks needs ANALYZE: it is past statsMinBytes
// and has no statistics yet (neither an ANALYZE nor an autoanalyze ran on
// it), or it holds more than twice the rows the last ANALYZE or VACUUM
// counted (reltuples), by the live rows the statistics system counts
// (n_live_tup: inserts less deletes). Claims and finishes update rows:
// they leave the count as it is, however much the table's pages grow with
// the dead versions they leave before a vacuum, so a burn-down is not
// interrupted by an ANALYZE, whose snapshot would keep every row version
// dead meanwhile from being pruned or its index entries removed.
const sqlStatsStale = `SELECT pg_relation_size(c.oid) >= $1 AND (
		coalesce(s.last_analyze, s.last_autoanalyze) IS NULL
		OR coalesce(s.n_live_tup, 0) > 2 * greatest(c.reltuples, 0)::bigint)
	FROM pg_class AS c LEFT JOIN pg_stat_user_tables AS s ON s.relid = c.oid
	WHERE c.oid = 'tasks'::regclass`

// RefreshStats runs ANALYZE on tasks when sqlStatsStale says so, under an
// advisory lock that a node already doing it holds (the others skip), and
// reports whether it ran.
//
// Why: PostgreSQL plans from statistics that autovacuum takes on its own
// timing (a database is visited every autovacuum_naptime, a minute by
// default). A backlog of a million future tasks added to a table that had
// none yet leaves the planner without any: it then estimates one row per
// queue, and the dispatcher's read of the queues with a task due
// (sqlDueQueues: one seek into tasks_due per queue) ties with a scan of
// the queue through tasks_created and a sort. Measured: in runs where the
// tie went to the scan, that read took 42 ms a call instead of 0.2, and a
// steady load beside the backlog ran at a third of its pace; with the
// statistics taken, every run chose tasks_due.
func (s *Store) RefreshStats(ctx context.Context) (bool, error) {
	ran := false
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var locked bool
		if err := tx.QueryRow(ctx, sqlStatsLock, statsLockClass).Scan(&locked); err != nil || !locked {
			return err
		}
		var stale bool
		if err := tx.QueryRow(ctx, sqlStatsStale, statsMinBytes).Scan(&stale); err != nil || !stale {
			return err
		}
		if err := bulk(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf(`SET LOCAL default_statistics_target = %d`, statsTarget)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `ANALYZE tasks`); err != nil {
			return err
		}
		ran = true
		return nil
	})
	if err != nil {
		return false, interpretError(err)
	}
	return ran, nil
}
