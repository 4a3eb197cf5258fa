package errandapi

import (
	"runtime"
	"sync"
)

// Outbox sends the frames of a worker connection's concurrent senders
// together, to a side that reads batches (hello's or welcome's Batches): a
// sender that finds no write under way becomes the writer; it first lets
// the senders that are ready to run add their frames (runtime.Gosched),
// then writes what waits in as few messages as fit (PackBatches), and
// goes on while more waits; a sender that finds a write under way waits
// for the message that carries its frame. Many attempts sent to one
// worker at once, or many answers, cost the connection one write, not one
// each; a lone frame is written at once. Set the fields before the first
// Send.
type Outbox struct {
	// Write writes one message; calls never overlap.
	Write func(msg []byte) error
	// Queued and Writing, if set (tests), are told how many frames wait
	// each time one joins them, and when a writer is about to write what
	// waits.
	Queued  func(waiting int)
	Writing func()

	mu   sync.Mutex
	next *outgoing // frames waiting for the next write
	busy bool      // a sender is writing
}

// outgoing is the frames that go in one write and that write's outcome.
type outgoing struct {
	frames [][]byte
	done   chan struct{} // closed once written
	err    error
}

// Send writes frames (each one encoded frame) in order, with whatever
// other senders' frames wait, and returns the error of the write that
// carried them.
func (o *Outbox) Send(frames ...[]byte) error {
	o.mu.Lock()
	if o.next == nil {
		o.next = &outgoing{done: make(chan struct{})}
	}
	mine := o.next
	mine.frames = append(mine.frames, frames...)
	if o.Queued != nil {
		o.Queued(len(mine.frames))
	}
	if o.busy {
		o.mu.Unlock()
		<-mine.done
		return mine.err
	}
	o.busy = true
	for {
		o.mu.Unlock()
		// Senders started together (a claim's attempts, a batch's answers)
		// are runnable now: let them add their frames first.
		runtime.Gosched()
		o.mu.Lock()
		g := o.next
		o.next = nil
		if g == nil {
			o.busy = false
			o.mu.Unlock()
			return mine.err
		}
		o.mu.Unlock()
		if o.Writing != nil {
			o.Writing()
		}
		for _, m := range PackBatches(g.frames) {
			if g.err = o.Write(m); g.err != nil {
				break
			}
		}
		close(g.done)
		o.mu.Lock()
	}
}
