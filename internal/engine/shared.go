package engine

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/store"
)

// changed wakes this node's services and, on a store shared by several
// nodes, every other node's too (through the store's Notifier).
func (e *Engine) changed() {
	e.dispatch.wake()
	e.waker.wake()
	if e.notifier != nil {
		e.notifier.send(store.ChangeAny)
	}
}

// functionsChanged is changed for tasks added whose target is a function:
// this node's dispatcher and waiters are woken, and the other nodes'
// waiters; their dispatchers only on the nodes that serve a function now
// (store.ChangeFunctions), as one that serves none claims none of them. A
// worker that connects later wakes its node's dispatcher itself.
func (e *Engine) functionsChanged() {
	e.dispatch.wake()
	e.waker.wake()
	if e.notifier != nil {
		e.notifier.send(store.ChangeFunctions)
	}
}

// servesFunctions is the notifier's test of whether this node serves any
// function now (deliver.FunctionServer): a deliverer that cannot tell
// counts as serving.
func servesFunctions(d deliver.Deliverer) func() bool {
	return func() bool {
		fs, ok := d.(deliver.FunctionServer)
		return !ok || fs.ServesFunctions()
	}
}

// waitersChanged is changed for tasks added that no other node's
// dispatcher need look for (addedTo): the long polls and the console's
// watchers are woken, here and on the other nodes, and nothing else.
func (e *Engine) waitersChanged() {
	e.waker.wake()
	if e.notifier != nil {
		e.notifier.send(store.ChangeWaiters)
	}
}

// notifierService sends the NOTIFYs that changed asks for, and turns every
// notification heard (other nodes' changes) into a local wake-up of the
// wakers it rings: all of them for any change, only the long polls' for
// another node's adds that concern only them (store.HeardWaiters). Asks
// that meet while a NOTIFY is pending share it, as the wider of their
// kinds (wide); a NOTIFY for the waiters alone waits out waitersNotifyGap.
//
// A node alone on its store sends none: its own services are woken
// without one, and a NOTIFY cost PostgreSQL ~80 µs a task of single adds
// (the sender's transaction and the delivery to this node's own LISTEN).
// It knows it is alone when its heartbeat (the liveness service) saw no
// other node's row and it heard no change notification meanwhile. A node
// that joins announces itself with one once its row is stored (announce);
// a node that was alone and learns of another — by such a notification or
// by a beat — sends one NOTIFY at once, which covers every change it did
// not announce while alone (each notification means "look again"). So no
// change goes unannounced to a node that listens; one made just as a node
// joined reaches it when the announcement is answered. A (re)connect of
// its LISTEN counts as a notification heard (one may have been missed); a
// configuration notification does not: the store reports this node's own
// configuration changes as it reports others'.
type notifierService struct {
	runner
	n       store.Notifier
	log     *slog.Logger
	waiters *waker        // rung for another node's adds for the waiters alone
	rings   []*waker      // rung for any other change
	asks    chan struct{} // a change to announce; one pending covers many
	wide    atomic.Bool   // an ask since the last NOTIFY was of store.ChangeAny
	fns     atomic.Bool   // an ask since the last NOTIFY was of store.ChangeFunctions
	// serves reports whether this node serves any function now: another
	// node's add of a function's task wakes only its waiters otherwise.
	serves func() bool

	mu    sync.Mutex  // held to change alone, and for heard
	heard uint64      // notifications heard (and reconnects), for mark and beat
	alone atomic.Bool // no other node on the store, as last seen (read without mu)

	skipped  *progress[int] // tests only: changes not announced, alone
	heardAll *progress[int] // tests only: heardOne's calls, each counted once its wakers rang
	asked    *progress[int] // tests only: ask's calls
	covered  *progress[int] // tests only: of asked, those the NOTIFYs sent so far covered

	waitersGap time.Duration // waitersNotifyGap; tests may set it before Start
}

func newNotifierService(n store.Notifier, log *slog.Logger, serves func() bool, waiters *waker, rings ...*waker) *notifierService {
	return &notifierService{n: n, log: log, serves: serves, waiters: waiters, rings: rings, asks: make(chan struct{}, 1), waitersGap: waitersNotifyGap}
}

// send asks for one NOTIFY of c, unless this node is alone; it never
// blocks.
func (s *notifierService) send(c store.Change) {
	if s.alone.Load() {
		s.skipped.update(func(n *int) { *n++ })
		return
	}
	s.ask(c)
}

// ask queues a NOTIFY of c whether or not this node is alone. The flag is
// set before the ask is queued and taken after it is received (run), so a
// wide ask that finds another pending is sent wide with it.
func (s *notifierService) ask(c store.Change) {
	switch c {
	case store.ChangeWaiters:
	case store.ChangeFunctions:
		s.fns.Store(true)
	default:
		s.wide.Store(true)
	}
	s.asked.update(func(n *int) { *n++ }) // after the flag: see covered
	select {
	case s.asks <- struct{}{}:
	default: // one is pending: it covers this change too
	}
}

// announce sends one NOTIFY, alone or not: this node's row is stored, and
// the nodes that thought themselves alone learn that they are not.
func (s *notifierService) announce() {
	if s != nil {
		s.ask(store.ChangeAny)
	}
}

// mark is taken before a heartbeat: beat sets the node alone only if
// nothing was heard since.
func (s *notifierService) mark() uint64 {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heard
}

// beat takes what a heartbeat begun at mark saw: others, the other nodes'
// rows, or err. A failed beat saw nothing, and the node stops counting
// itself alone.
func (s *notifierService) beat(mark uint64, others int, err error) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil && others == 0:
		// A notification heard since the beat began may come from a node
		// whose row the beat's snapshot did not see yet.
		if s.heard == mark {
			s.alone.Store(true)
		}
	default:
		s.joined()
	}
}

// heardOne records a change notification heard — another node is there,
// or an application's transaction that added tasks (TaskAddTx) — or a
// (re)connect of the LISTEN, which may have missed one.
func (s *notifierService) heardOne() {
	s.mu.Lock()
	s.heard++
	s.joined()
	s.mu.Unlock()
}

// joined ends this node's being alone; the first time, it sends the
// NOTIFY that covers the changes it did not announce. s.mu is held.
func (s *notifierService) joined() {
	if s.alone.Swap(false) {
		s.ask(store.ChangeAny)
	}
}

// Start listens and notifies until Stop.
func (s *notifierService) Start(ctx context.Context) error { return s.start(ctx, s.run) }

func (s *notifierService) run(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.n.Listen(ctx, func(h store.Heard) {
			if h != store.HeardConfig {
				s.heardOne()
				defer s.heardAll.update(func(n *int) { *n++ })
			}
			if h == store.HeardWaiters || h == store.HeardFunctions && !s.serves() {
				s.waiters.wake()
				return
			}
			for _, w := range s.rings {
				w.wake()
			}
		})
	}()
	var last time.Time // the last NOTIFY's end
	for {
		select {
		case <-ctx.Done():
			<-done
			return
		case <-s.asks:
		}
		// For the waiters alone: wait out the gap, unless a wider change
		// is asked for meanwhile (each ask meanwhile queues a token: it
		// ends this wait, and the loop waits on for a waiters' one).
		for !s.wide.Load() && !s.fns.Load() {
			wait := s.waitersGap - time.Since(last)
			if wait <= 0 {
				break
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				<-done
				return
			case <-t.C:
			case <-s.asks:
				t.Stop()
			}
		}
		// Every ask counted by now set its flag before it was counted, so
		// the kind taken next covers it.
		n := s.asked.value()
		c := store.ChangeWaiters
		if s.fns.Swap(false) {
			c = store.ChangeFunctions
		}
		if s.wide.Swap(false) {
			c = store.ChangeAny
		}
		if err := s.n.Notify(ctx, c); err != nil && ctx.Err() == nil {
			s.log.Warn("notify failed; other nodes find the change within their backstop", "err", err)
		}
		last = time.Now()
		s.covered.report(n)
	}
}

// waitersNotifyGap is the least time from a node's last NOTIFY to one for
// the waiters alone (store.ChangeWaiters): adds asked for within it share
// one, sent when it has passed (or with a change of any kind asked for
// meanwhile, which is sent at once, as ever). A NOTIFY costs PostgreSQL
// its sender's statement and a wake-up of every node's LISTEN connection
// (signals and context switches): ~400 µs of its CPU for three nodes on
// the two-core machine of BENCHMARKS.md's forty-eighth session, where a
// NOTIFY for each of three nodes' single adds to a pull queue took more of
// PostgreSQL than the adds themselves. An add after a quiet moment is
// announced at once; under a stream of them another node's long polls
// hear of them at most this much later (they lease what is there when
// they wake), and hear at most 1/waitersNotifyGap such NOTIFYs a second
// from a node. It is real time (the database's cost is), not the engine's
// clock.
const waitersNotifyGap = 20 * time.Millisecond

// clockSync keeps the engine's clock on the store's (the database's) clock,
// so that nodes with drifting clocks agree on leases and deadlines. It
// measures the offset at Start and then every interval, halving the round
// trip.
type clockSync struct {
	runner
	sc       store.ServerClock
	clk      *clock.Offset
	log      *slog.Logger
	interval time.Duration
}

// Start sets the offset once (its error means the engine cannot start: its
// clock would be wrong), then keeps it set until Stop.
func (c *clockSync) Start(ctx context.Context) error {
	if err := c.RunOnce(ctx); err != nil {
		return err
	}
	return c.start(ctx, c.run)
}

// RunOnce measures and sets the offset once.
func (c *clockSync) RunOnce(ctx context.Context) error {
	t0 := c.clk.Base.Now()
	server, err := c.sc.ServerNow(ctx)
	if err != nil {
		return err
	}
	t1 := c.clk.Base.Now()
	mid := t0.Add(t1.Sub(t0) / 2)
	off := server.Sub(mid)
	if d := off - c.clk.Get(); d > time.Second || d < -time.Second {
		c.log.Warn("this node's clock differs from the database's; following the database", "offset", off)
	}
	c.clk.Set(off)
	return nil
}

func (c *clockSync) run(ctx context.Context) {
	for {
		if !sleep(ctx, c.clk.Base, c.clk.Base.Now().Add(c.interval), nil, nil) {
			return
		}
		if err := c.RunOnce(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("reading the database's clock failed", "err", err)
		}
	}
}
