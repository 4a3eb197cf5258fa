package engine

import "sync"

// waker tells sleeping services that something changed (a task was added,
// run or retried; a queue changed). Each call to wait returns a channel that
// is closed at the next wake: no wake is lost between a check and a sleep.
type waker struct {
	mu  sync.Mutex
	ch  chan struct{}
	gen uint64 // wakes so far
}

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
	close(w.ch)
	w.ch = make(chan struct{})
	w.gen++
	w.mu.Unlock()
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
