package engine

import "sync"

// waker tells sleeping services that something changed (a task was added,
// run or retried; a queue changed). Each call to wait returns a channel that
// is closed at the next wake: no wake is lost between a check and a sleep.
type waker struct {
	mu  sync.Mutex
	ch  chan struct{}
	gen uint64 // wakes so far
	// What the wakes since the last takeHint said (see wakeWith).
	hint     int64
	hintKind hintKind
}

// hintKind is what the wakes since a service last asked said of the change.
type hintKind int

const (
	hintNone    hintKind = iota // no wake since
	hintAt                      // only wakeWith: the soonest time they named
	hintUnknown                 // a plain wake: what changed is not known
)

func newWaker() *waker { return &waker{ch: make(chan struct{})} }

// wait returns the channel closed by the next wake, and how many wakes came
// before it: a pass that starts after wait has seen every change up to then.
func (w *waker) wait() (<-chan struct{}, uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ch, w.gen
}

// next returns the channel closed by the next wake (wait without the count,
// for a TriggerDeps.Wake).
func (w *waker) next() <-chan struct{} {
	ch, _ := w.wait()
	return ch
}

// wake closes the current channel and starts a new one.
func (w *waker) wake() {
	w.mu.Lock()
	w.hintKind = hintUnknown
	w.ring()
	w.mu.Unlock()
}

// wakeWith wakes as wake does, and says that the change brings something
// due at unix-millisecond at, and nothing sooner: a lease taken or extended
// on this node, whose expiry the rescuer then need not read back.
func (w *waker) wakeWith(at int64) {
	w.mu.Lock()
	switch w.hintKind {
	case hintNone:
		w.hintKind, w.hint = hintAt, at
	case hintAt:
		w.hint = min(w.hint, at)
	}
	w.ring()
	w.mu.Unlock()
}

// ring closes the current channel and starts a new one; w.mu is held.
func (w *waker) ring() {
	close(w.ch)
	w.ch = make(chan struct{})
	w.gen++
}

// takeHint returns what the wakes since the last call said: nothing
// (hintNone), only wakeWith calls and the soonest time they named (hintAt),
// or a plain wake among them (hintUnknown).
func (w *waker) takeHint() (int64, hintKind) {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, k := w.hint, w.hintKind
	w.hint, w.hintKind = 0, hintNone
	return at, k
}

// wakes returns how many wakes there have been.
func (w *waker) wakes() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gen
}

// Changes returns a channel closed at the next change the engine sees (a
// task added, run, cancelled or retried, a queue changed; on a shared
// store, another node's change too): the console's live counts wait on it.
func (e *Engine) Changes() <-chan struct{} { return e.waker.next() }
