package engine

import (
	"context"
	"log/slog"
	"math"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/metrics"
	"github.com/errandhq/errand/internal/store"
)

// A node beats every NodeBeatEvery and is declared dead by the others once
// it has been silent for NodeDeadAfter. The two set the trade-off between
// recovery time and false suspicion (docs/engine.md, "Dead nodes"): a
// killed node's attempts are retried between NodeDeadAfter and
// NodeDeadAfter + NodeBeatEvery after its last beat, and a live node is
// wrongly declared dead only if none of its beats lands for NodeDeadAfter
// (three in a row missed: a stall of its process or of its connection to
// the store that long). A node wrongly declared dead loses nothing but the
// attempts in flight: they are retried elsewhere, and its own late
// outcomes are refused by the lease fence.
const (
	NodeBeatEvery = time.Second
	NodeDeadAfter = 3 * time.Second
)

// livenessDeps is what the liveness service uses.
type livenessDeps struct {
	store store.Store
	clock clock.Clock
	log   *slog.Logger
	node  string // this node's id, the prefix of its push lease ids
	// rescue ends the push attempts that dead nodes held (the rescuer's
	// RescueNodes).
	rescue    func(ctx context.Context, nodes []string) (int, error)
	every     time.Duration
	deadAfter time.Duration
	metrics   *metrics.Metrics
	// peers learns from each beat whether other nodes share the store
	// (nil on a store no other node shares: nothing to tell them).
	peers *notifierService
}

// Liveness keeps this node's row of the store's nodes table beating and
// watches the others': a node silent for deadAfter is declared dead, its
// push attempts are ended as failed and retried at once, and its row goes.
// The beat and the look at the others are one statement. On Stop the node
// leaves: its row goes, so that no one waits for it (the dispatcher, which
// stops first, has handed back its attempts).
type Liveness struct {
	runner
	livenessDeps
	lastOK time.Time             // this node's last beat stored (the run loop's alone)
	lostAt time.Time             // the first failed beat since the last stored one; zero while they land
	beats  *progress[beatReport] // tests only
}

// beatReport is what the liveness service reports to tests after a beat:
// the clock at the beat, the nodes it found dead and how many attempts it
// ended.
type beatReport struct {
	Beats int
	Now   time.Time
	Dead  []string
	Ended int
}

func newLiveness(d livenessDeps) *Liveness { return &Liveness{livenessDeps: d} }

// Start runs the heartbeat until Stop.
func (l *Liveness) Start(ctx context.Context) error { return l.start(ctx, l.run) }

func (l *Liveness) run(ctx context.Context) {
	defer l.leave(ctx)
	for {
		now := l.clock.Now()
		dead, ended, err := l.beat(ctx, now)
		if err != nil && ctx.Err() == nil {
			l.log.Warn("node heartbeat failed", "node", l.node, "err", err)
		}
		l.beats.update(func(r *beatReport) { *r = beatReport{Beats: r.Beats + 1, Now: now, Dead: dead, Ended: ended} })
		// Absolute, so that a slow beat does not push the next one later.
		if !sleep(ctx, l.clock, now.Add(l.every), nil, nil) {
			return
		}
	}
}

// RunOnce beats once at the clock's time and retries the attempts of the
// nodes it finds dead; it returns those nodes and how many attempts ended.
// It is for tests, with the service not running.
func (l *Liveness) RunOnce(ctx context.Context) ([]string, int, error) {
	return l.beat(ctx, l.clock.Now())
}

func (l *Liveness) beat(ctx context.Context, now time.Time) ([]string, int, error) {
	deadBefore := now.Add(-l.deadAfter).UnixMilli()
	mark := l.peers.mark()
	seen, err := l.store.NodeBeat(ctx, &store.NodeBeatParams{Node: l.node, Now: now.UnixMilli(), DeadBefore: deadBefore})
	l.peers.beat(mark, seen.Others, err)
	if err != nil {
		if l.lostAt.IsZero() {
			l.lostAt = now
		}
		return nil, 0, err
	}
	if l.lastOK.IsZero() {
		// This node's row is stored: the nodes already on the store learn
		// from this notification that they are no longer alone (their
		// next beats would tell them within a second).
		l.peers.announce()
	}
	dead := seen.Dead
	// The beat is the node's one write every second: the first to land
	// after failures says the store is back (the failures' warnings are
	// written once in 30 s, so without it an outage's end went unseen).
	if !l.lostAt.IsZero() {
		l.log.Info("the store answers again", "node", l.node, "failingFor", now.Sub(l.lostAt).Round(time.Millisecond).String())
		l.lostAt = time.Time{}
	}
	// Another node's silence is evidence only if this node was not silent
	// too: after its own pause, or a database outage that stopped every
	// node's beats, the others had no more chance to beat than it had. It
	// judges on its next beat, by which time a live node has beaten again.
	// (Its first beat judges nothing either: a node starting after a crash
	// frees its predecessor's attempts a beat later.)
	judged := !l.lastOK.IsZero() && now.Sub(l.lastOK) <= l.deadAfter-l.every
	l.lastOK = now
	if !judged || len(dead) == 0 {
		return nil, 0, nil
	}
	ended, err := l.rescue(ctx, dead)
	if err != nil {
		return dead, ended, err // their rows stay: the next beat tries again
	}
	l.metrics.NodesDeclaredDead.Add(float64(len(dead)))
	l.log.Warn("nodes stopped beating: declared dead, their attempts retried", "nodes", dead,
		"silentFor", l.deadAfter.String(), "attempts", ended)
	// Only the rows still silent go: a node that was only paused and beat
	// meanwhile stays (its outcomes of the attempts ended here are refused).
	return dead, ended, l.store.NodeForget(ctx, &store.NodeForgetParams{Nodes: dead, DeadBefore: deadBefore})
}

// leave removes this node's row, so that the others do not wait for it.
func (l *Liveness) leave(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := l.store.NodeForget(ctx, &store.NodeForgetParams{Nodes: []string{l.node}, DeadBefore: math.MaxInt64})
	if err != nil {
		l.log.Warn("removing this node's heartbeat row failed; the others will declare it dead", "node", l.node, "err", err)
	}
}

// Liveness returns the node's liveness service.
func (e *Engine) Liveness() *Liveness { return e.liveness }

// Node returns this node's id.
func (e *Engine) Node() string { return e.node }
