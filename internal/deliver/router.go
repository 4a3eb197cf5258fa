package deliver

import "github.com/errandhq/errand/internal/task"

// inProcessSlots is what an in-process function offers a claim: no cap of
// its own (the queue's and instance's limits apply).
const inProcessSlots = 1 << 20

// Free implements Router: every registered function, for every instance.
func (f *Functions) Free(string) map[string]int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make(map[string]int, len(f.handlers))
	for name := range f.handlers {
		out[name] = inProcessSlots
	}
	return out
}

// Free implements Router when the mux's function deliverer does; a mux
// without one serves no function.
func (m *Mux) Free(instanceID string) map[string]int {
	if r, ok := m.Function.(Router); ok {
		return r.Free(instanceID)
	}
	return map[string]int{}
}

// Reserver is implemented by a Router whose slots are taken when an
// attempt is claimed, before its delivery starts: the dispatcher claims
// again at once, and must not see the same slots free twice.
type Reserver interface {
	Reserve(t *task.Task, fn string)
}

// Reserve implements Reserver when the mux's function deliverer does.
func (m *Mux) Reserve(t *task.Task, fn string) {
	if r, ok := m.Function.(Reserver); ok {
		r.Reserve(t, fn)
	}
}
