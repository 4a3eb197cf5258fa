package engine

import "context"

// OutcomeWatch lets a test wait for attempt outcomes the engine stores (a
// test signal, River's pattern): a test reads what it waits for, and reads
// again only after the next outcome is stored, instead of polling on a
// timer. Production never turns it on.
type OutcomeWatch struct{ p *progress[int] }

// WatchOutcomes turns on e's outcome signal and returns it; call it
// before Start. Only tests call it.
func WatchOutcomes(e *Engine) *OutcomeWatch {
	if e.signals.outcomes == nil {
		e.signals.outcomes = newProgress[int]()
	}
	return &OutcomeWatch{p: e.signals.outcomes}
}

// Count returns how many attempt outcomes have been stored so far.
func (w *OutcomeWatch) Count() int {
	n, _ := w.p.wait(context.Background(), func(int) bool { return true })
	return n
}

// After waits until more than n outcomes in all have been stored, or ctx
// ends, and returns how many have.
func (w *OutcomeWatch) After(ctx context.Context, n int) (int, error) {
	return w.p.wait(ctx, func(got int) bool { return got > n })
}
