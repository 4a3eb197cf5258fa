package history

import (
	"slices"
	"sync"
	"time"
)

// Func is what an entry did.
type Func string

// The operations a fault test records.
const (
	// Add is one task of an add call (Name set; ID once known).
	Add Func = "add"
	// Lease is one task handed to a pull worker by a lease call: Attempt is
	// the task's attempt count, LeaseID and Expires the lease. A lease call
	// whose answer was lost is recorded as one Lease entry without a name,
	// ended Info.
	Lease Func = "lease"
	// Ack is an ack of a lease (LeaseID set).
	Ack Func = "ack"
	// Release is a release of a lease with an error: a failed attempt.
	Release Func = "release"
	// Deliver is one push delivery as the receiver saw it: Attempt is the
	// body's task.attempt; OK when the receiver answered 2xx, Fail when it
	// answered otherwise or misbehaved on purpose, Info when the sender cut
	// the connection first.
	Deliver Func = "deliver"
)

// Type is how an entry ended.
type Type string

// The outcomes of an entry, as in Jepsen.
const (
	// Pending: not ended yet; Check reads it as Info.
	Pending Type = "invoke"
	// OK: it happened.
	OK Type = "ok"
	// Fail: it definitely did not happen.
	Fail Type = "fail"
	// Info: it may or may not have happened (the answer was lost).
	Info Type = "info"
)

// Entry is one operation.
type Entry struct {
	Index   int
	Process string // who did it: "adder-3", "worker-1", "receiver"
	F       Func
	Type    Type
	Queue   string
	Name    string
	ID      string
	Attempt int
	LeaseID string
	// Expires is a lease's expiry (Lease entries).
	Expires time.Time
	// Start is when the call was sent (or the delivery arrived); End when
	// its answer came (or the receiver's handler returned).
	Start, End time.Time
	// Status is the HTTP status the receiver answered (Deliver) or the
	// server answered (others; 0 for no answer).
	Status int
	// Code is the error code of a refusal; Err says what went wrong.
	Code string
	Err  string
	// WebhookID and SigOK are a delivery's Webhook-Id header and whether
	// its x-errand-signature verified.
	WebhookID string
	SigOK     bool
}

// History is the record of a run. It is safe for concurrent use.
type History struct {
	// Now is the clock of Begin and End (time.Now when nil).
	Now func() time.Time

	mu      sync.Mutex
	entries []*Entry
	changed chan struct{}
}

// New returns an empty history on the real clock.
func New() *History { return &History{changed: make(chan struct{})} }

func (h *History) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// Begin records the start of an operation (its Start is set now, its Type
// Pending) and returns it; End it with End.
func (h *History) Begin(e Entry) *Entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.Start.IsZero() {
		e.Start = h.now()
	}
	e.Type, e.Index = Pending, len(h.entries)
	p := &e
	h.entries = append(h.entries, p)
	h.notify()
	return p
}

// End ends e as typ at now; fill, when not nil, sets its other fields
// (ID, Attempt, Status, Err …) under the history's lock.
func (h *History) End(e *Entry, typ Type, fill func(*Entry)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e.Type, e.End = typ, h.now()
	if fill != nil {
		fill(e)
	}
	h.notify()
}

// Record adds an entry that has already ended (Start and End set by the
// caller, or now).
func (h *History) Record(e Entry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	if e.Start.IsZero() {
		e.Start = now
	}
	if e.End.IsZero() {
		e.End = now
	}
	e.Index = len(h.entries)
	h.entries = append(h.entries, &e)
	h.notify()
}

func (h *History) notify() {
	if h.changed == nil {
		h.changed = make(chan struct{})
	}
	close(h.changed)
	h.changed = make(chan struct{})
}

// Changed returns a channel closed at the next entry begun or ended: a
// test waits on it instead of sleeping.
func (h *History) Changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.changed == nil {
		h.changed = make(chan struct{})
	}
	return h.changed
}

// Entries returns a copy of every entry, in the order begun.
func (h *History) Entries() []Entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Entry, len(h.entries))
	for i, e := range h.entries {
		out[i] = *e
	}
	return out
}

// Count returns how many entries of f ended as typ.
func (h *History) Count(f Func, typ Type) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, e := range h.entries {
		if e.F == f && e.Type == typ {
			n++
		}
	}
	return n
}

// FromEntries builds a history of ended entries, for tests of the checker
// and for planting a fault into a copy of a real history.
func FromEntries(es []Entry) *History {
	h := New()
	for _, e := range slices.Clone(es) {
		e.Index = len(h.entries)
		h.entries = append(h.entries, &e)
	}
	return h
}
