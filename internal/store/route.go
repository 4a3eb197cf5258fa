package store

import (
	"encoding/json"
	"math"

	"github.com/errandhq/errand/internal/task"
)

// RouteFilter is ClaimParams.Functions reduced to what a backend's claim
// statement filters on; Keep then trims the claimed rows to the slots.
type RouteFilter struct {
	// All: no filter (Functions is nil).
	All bool
	// QueueOK: a task without a target of its own may be claimed (the
	// queue's target is not a function, or is one with a free slot).
	QueueOK bool
	// Served lists the functions with a free slot; ServedJSON is the same
	// as a JSON array.
	Served     []string
	ServedJSON string
	// ExpiredBefore: a task created at or before it is claimed whatever
	// its function, so that maxAgeSeconds ends it (math.MinInt64: none).
	ExpiredBefore int64
}

// Route returns p's route filter.
func (p *ClaimParams) Route() RouteFilter {
	if p.Functions == nil {
		return RouteFilter{All: true, QueueOK: true, Served: []string{}, ServedJSON: "[]", ExpiredBefore: math.MinInt64}
	}
	f := RouteFilter{Served: []string{}, ExpiredBefore: math.MinInt64}
	for fn, n := range p.Functions {
		if n > 0 {
			f.Served = append(f.Served, fn)
		}
	}
	b, _ := json.Marshal(f.Served)
	f.ServedJSON = string(b)
	qt := p.Queue.Target
	f.QueueOK = qt == nil || qt.Function == "" || p.Functions[qt.Function] > 0
	if p.Queue.MaxAgeSeconds > 0 {
		f.ExpiredBefore = task.SaturatingAddMs(p.Now, -p.Queue.MaxAgeSeconds, 1000)
	}
	return f
}

// FunctionOf is the function a task's attempt goes to: its own target's,
// or else its queue's; "" when that target is not a function.
func FunctionOf(t *task.Task, q *task.Queue) string {
	switch {
	case t.Target != nil:
		return t.Target.Function
	case q.Target != nil:
		return q.Target.Function
	}
	return ""
}

// Keep trims tasks (in claim order) to p.Functions' slots and to
// p.MaxBytes: a task of a function is kept while its function has a slot
// left (a task past its queue's maxAgeSeconds and a task of no function
// always are), and the tasks kept end before the first whose payload and
// params would take their total past MaxBytes (the first task kept is
// kept whatever its size).
func (p *ClaimParams) Keep(tasks []*task.Task) []*task.Task {
	if p.Functions == nil && p.MaxBytes <= 0 {
		return tasks
	}
	var expired int64
	var left map[string]int
	if p.Functions != nil {
		expired = p.Route().ExpiredBefore
		left = make(map[string]int, len(p.Functions))
		for fn, n := range p.Functions {
			left[fn] = n
		}
	}
	out := tasks[:0:0]
	size := 0
	for _, t := range tasks {
		if p.Functions != nil {
			fn := FunctionOf(t, p.Queue)
			switch {
			case fn == "" || t.CreatedAt <= expired:
			case left[fn] > 0:
				left[fn]--
			default:
				continue
			}
		}
		if p.MaxBytes > 0 {
			n := len(t.Payload) + len(t.Params)
			if len(out) > 0 && size+n > p.MaxBytes {
				break
			}
			size += n
		}
		out = append(out, t)
	}
	return out
}

// ClaimSize counts the payloads and params of the rows a claim has read,
// so that a claim with MaxBytes stops reading them (decoding, holding)
// once Keep could take no more: a lease of 1,000 tasks at the size limits
// would otherwise hold 128 MiB while it is made.
type ClaimSize struct{ n, bytes int }

// Add counts t, a row read.
func (c *ClaimSize) Add(t *task.Task) { c.n, c.bytes = c.n+1, c.bytes+len(t.Payload)+len(t.Params) }

// Past reports whether the rows read already pass p.MaxBytes, so that no
// further row can be kept (the first is always read). It counts every row
// read, so with p.Functions as well (which a lease does not set) it could
// stop before a row Keep would have taken.
func (c *ClaimSize) Past(p *ClaimParams) bool {
	return p.MaxBytes > 0 && c.n > 0 && c.bytes > p.MaxBytes
}

// KeepWith is Keep for tasks that come with a row reference each (refs[i]
// is tasks[i]'s: a ctid, a rowid): it returns the tasks kept and their
// references, in order.
func KeepWith[T any](p *ClaimParams, tasks []*task.Task, refs []T) ([]*task.Task, []T) {
	kept := p.Keep(tasks)
	if len(kept) == len(tasks) {
		return kept, refs
	}
	out := make([]T, 0, len(kept))
	for i, t := range tasks {
		if len(out) < len(kept) && kept[len(out)] == t {
			out = append(out, refs[i])
		}
	}
	return kept, out
}
