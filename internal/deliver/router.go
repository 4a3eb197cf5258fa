package deliver

import (
	"context"

	"github.com/errandhq/errand/internal/task"
)

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

// FunctionServer is implemented by a deliverer that can tell whether this
// node serves any function now: a node that serves none claims no
// function task (its Router offers no slot), so another node's add of one
// need not wake its dispatcher.
type FunctionServer interface {
	ServesFunctions() bool
}

// ServesFunctions implements FunctionServer: a handler is registered.
func (f *Functions) ServesFunctions() bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.handlers) > 0
}

// ServesFunctions implements FunctionServer: an in-process handler or a
// connected worker.
func (f *FunctionRoutes) ServesFunctions() bool {
	return f.InProcess != nil && f.InProcess.ServesFunctions() || f.Workers != nil && f.Workers.ServesFunctions()
}

// ServesFunctions implements FunctionServer when the mux's function
// deliverer does; one that cannot tell counts as serving, and a mux
// without one serves none.
func (m *Mux) ServesFunctions() bool {
	if m.Function == nil {
		return false
	}
	fs, ok := m.Function.(FunctionServer)
	return !ok || fs.ServesFunctions()
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

// FunctionRoutes delivers function targets to an in-process handler when
// this process registered one (the embedded engine), else to a connected
// worker.
type FunctionRoutes struct {
	InProcess *Functions // nil for none
	Workers   *Workers   // nil for none
}

func (f *FunctionRoutes) inProcess(fn string) bool {
	if f.InProcess == nil {
		return false
	}
	f.InProcess.mu.RLock()
	defer f.InProcess.mu.RUnlock()
	return f.InProcess.handlers[fn] != nil
}

// Deliver implements Deliverer.
func (f *FunctionRoutes) Deliver(ctx context.Context, r *Request) Result {
	if f.inProcess(r.Target.Function) || f.Workers == nil {
		if f.InProcess == nil {
			return failed(0, "function targets are not served here")
		}
		return f.InProcess.Deliver(ctx, r)
	}
	return f.Workers.Deliver(ctx, r)
}

// Free implements Router: both kinds' functions.
func (f *FunctionRoutes) Free(instanceID string) map[string]int {
	out := map[string]int{}
	if f.Workers != nil {
		out = f.Workers.Free(instanceID)
	}
	if f.InProcess != nil {
		for fn, n := range f.InProcess.Free(instanceID) {
			out[fn] = n
		}
	}
	return out
}

// Reserve implements Reserver for the functions workers serve.
func (f *FunctionRoutes) Reserve(t *task.Task, fn string) {
	if f.Workers != nil && !f.inProcess(fn) {
		f.Workers.Reserve(t, fn)
	}
}
