package engine

import "sync"

// waker tells sleeping services that something changed (a task was added,
// run or retried; a queue changed). Each call to wait returns a channel that
// is closed at the next wake: no wake is lost between a check and a sleep.
type waker struct {
	mu sync.Mutex
	ch chan struct{}
}

func newWaker() *waker { return &waker{ch: make(chan struct{})} }

// wait returns the channel closed by the next wake.
func (w *waker) wait() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ch
}

// wake closes the current channel and starts a new one.
func (w *waker) wake() {
	w.mu.Lock()
	close(w.ch)
	w.ch = make(chan struct{})
	w.mu.Unlock()
}
