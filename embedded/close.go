package embedded

import "context"

// Close stops the engine and closes the store. It cancels the ctx of every
// handler running and waits for each to return: a handler that never
// returns blocks Close. A handler that returns a nil error has succeeded,
// and its result is recorded; one that returns an error (ctx.Err()
// included) gives the attempt back uncounted, to run again. A Lease waiting
// returns ErrClosed at once, and every call after Close returns ErrClosed.
// Close again does nothing more and returns what the first returned.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.end() // calls from now on are refused; a waiting Lease returns
		e.node.Close()
		defer e.unlock() // once the store is closed
		e.closeErr = e.st.Close()
	})
	return e.closeErr
}

// closed reports whether Close began.
func (e *Engine) closed() bool { return e.life.Err() != nil }

// refuse returns ErrClosed once Close began, else nil.
func (e *Engine) refuse() error {
	if e.closed() {
		return ErrClosed
	}
	return nil
}

// fail is err as a call answers it: ErrClosed if Close began meanwhile (the
// store closed under the call), else publicError's.
func (e *Engine) fail(err error) error {
	if err != nil && e.closed() {
		return ErrClosed
	}
	return publicError(err)
}

// untilClose is ctx, cancelled also when Close begins: a call that waits
// (Lease) ends then.
func (e *Engine) untilClose(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(e.life, cancel)
	return ctx, func() { stop(); cancel() }
}
