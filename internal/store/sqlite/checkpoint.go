package sqlite

import (
	"database/sql"
	"log/slog"
	"sync/atomic"
)

// The WAL is copied back into the database file (checkpointed) by a
// goroutine of the store on a connection of its own, not by the writer.
// SQLite's automatic checkpoint runs inside the commit that crosses its
// threshold, so the one writer — which every write transaction waits for —
// spent that commit copying pages and waiting for two fsyncs (the WAL's
// before the copy, the database file's after it): under a burn-down the
// writer holds its transaction ~97% of the time, and those checkpoints were
// ~2% of its CPU and more of its wall time. A PASSIVE checkpoint from
// another connection runs beside the writer's transactions, which go on
// appending to the WAL meanwhile.
//
// The writer keeps an automatic checkpoint at a higher threshold
// (writerCheckpointPages) as a fallback, should the background one fall
// behind or fail.
const (
	// checkpointEvery is how many commits of the writer kick the
	// checkpointer; kicks that come while it runs fold into one run. Every
	// 8 commits cost the push workload CPU (hot pages copied back more
	// often) for no gain in the burn-down; 32 measured no worse in either.
	checkpointEvery = 32
	// writerCheckpointPages is the writer's own automatic checkpoint:
	// four times SQLite's default of 1,000 pages.
	writerCheckpointPages = 4000
)

// checkpointer runs PASSIVE checkpoints on its own connection when kicked.
type checkpointer struct {
	db      *sql.DB
	log     *slog.Logger
	commits atomic.Int64
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	// ran, if set (tests), is told of each checkpoint's result.
	ran func(checkpointResult)
}

// checkpointResult is what PRAGMA wal_checkpoint answered: whether it was
// blocked, the frames in the WAL and how many of them are now copied
// back, or the error.
type checkpointResult struct {
	busy, log, copied int
	err               error
}

// newCheckpointer starts a checkpointer on db, which it closes when
// stopped.
func newCheckpointer(db *sql.DB, log *slog.Logger, ran func(checkpointResult)) *checkpointer {
	c := &checkpointer{db: db, log: log, kick: make(chan struct{}, 1), stop: make(chan struct{}),
		done: make(chan struct{}), ran: ran}
	go c.run()
	return c
}

// committed counts one commit of the writer, and kicks the checkpointer
// every checkpointEvery of them.
func (c *checkpointer) committed() {
	if c == nil {
		return // Open has not started it yet
	}
	if c.commits.Add(1)%checkpointEvery != 0 {
		return
	}
	select {
	case c.kick <- struct{}{}:
	default: // a kick is waiting already
	}
}

// run checkpoints once per kick until stopped.
func (c *checkpointer) run() {
	defer close(c.done)
	var lastErr string
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
		}
		var r checkpointResult
		r.err = c.db.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&r.busy, &r.log, &r.copied)
		switch {
		case r.err != nil && r.err.Error() != lastErr:
			// Another process's checkpoint, a full disk: the writer's own
			// checkpoint still runs at writerCheckpointPages. Said once
			// until the error changes.
			c.log.Warn("sqlite: background checkpoint failed", "err", r.err)
			lastErr = r.err.Error()
		case r.err == nil:
			lastErr = ""
		}
		if c.ran != nil {
			c.ran(r)
		}
	}
}

// close stops the checkpointer and closes its connection.
func (c *checkpointer) close() error {
	close(c.stop)
	<-c.done
	return c.db.Close()
}
