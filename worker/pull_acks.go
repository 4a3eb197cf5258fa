package worker

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/errandhq/errand/errandapi"
)

// acks sends a Pull loop's acks in batches (the batch ack, AckMany): an ack
// made while a batch is on its way waits for it, and the next batch takes
// every ack waiting then, so a busy loop answers hundreds of tasks a call
// and a quiet one each task at once, with no wait added. No goroutine of
// its own: the task that finds no batch on its way sends one, and one
// that finds more waiting after it hands the next batch to the first of
// them.
type acks struct {
	mu      sync.Mutex
	waiting []*ackWait
	sending bool // a batch is on its way, or about to be
}

// ackWait is one task's ack waiting for its batch.
type ackWait struct {
	ack  errandapi.BatchAck
	done chan ackAnswer // perhaps a turn to send, then its answer
}

// ackAnswer is what a waiting ack is told: its outcome, or that it is to
// send the next batch.
type ackAnswer struct {
	err  error
	send bool
}

// A batch holds at most maxAckBatch acks (the server's bound) and results
// of at most maxAckBytes in all, well under the server's 16 MiB body.
const (
	maxAckBatch = 1000
	maxAckBytes = 8 << 20
)

// ackQueued, when set (tests), is told each ack that joins the waiting.
var ackQueued func()

// ack acks lt with result in a batch and returns its outcome: nil, its
// refusal (LEASE_LOST, NOT_FOUND), or the batch's error.
func (p *puller) ack(ctx context.Context, lt errandapi.LeasedTask, result json.RawMessage) error {
	w := &ackWait{ack: errandapi.BatchAck{ID: lt.ID, LeaseID: lt.LeaseID, Result: result}, done: make(chan ackAnswer, 1)}
	a := &p.acks
	a.mu.Lock()
	a.waiting = append(a.waiting, w)
	send := !a.sending
	a.sending = true
	a.mu.Unlock()
	if ackQueued != nil {
		ackQueued()
	}
	for {
		if send {
			p.sendAcks(ctx)
		}
		ans := <-w.done
		if !ans.send {
			return ans.err
		}
		send = true
	}
}

// sendAcks sends the acks waiting first as one batch, answers each, and
// hands the next batch to the first ack still waiting, if any.
func (p *puller) sendAcks(ctx context.Context) {
	a := &p.acks
	a.mu.Lock()
	n, size := 0, 0
	for n < len(a.waiting) && n < maxAckBatch {
		size += len(a.waiting[n].ack.Result) + len(a.waiting[n].ack.ID) + len(a.waiting[n].ack.LeaseID) + 64
		if n > 0 && size > maxAckBytes {
			break
		}
		n++
	}
	batch := a.waiting[:n:n]
	a.waiting = append([]*ackWait(nil), a.waiting[n:]...)
	a.mu.Unlock()

	list := make([]errandapi.BatchAck, len(batch))
	for i, w := range batch {
		list[i] = w.ack
	}
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	results, err := p.c.AckMany(actx, p.instance, p.queue, list)
	cancel()
	for i, w := range batch {
		switch {
		case len(results) == len(batch):
			w.done <- ackAnswer{err: results[i].Err()}
		case err != nil:
			w.done <- ackAnswer{err: err}
		default:
			w.done <- ackAnswer{err: errors.New("worker: the batch ack answered no result for the task")}
		}
	}

	a.mu.Lock()
	if len(a.waiting) == 0 {
		a.sending = false
		a.mu.Unlock()
		return
	}
	next := a.waiting[0]
	a.mu.Unlock()
	next.done <- ackAnswer{send: true}
}
