// Package embedded runs errand's engine inside a Go program: the same store,
// lifecycle, retries, limits and v1 API as `errand serve`, with functions
// served in-process. A push queue whose target is `{"function":
// "group/name"}` delivers each attempt to the handler registered for that
// name with Handle, without HTTP; a pull queue is leased and acknowledged
// with Lease and AckMany, also without HTTP. HTTPHandler serves the v1 API
// on the same engine, so other programs, the CLI and curl see and steer the
// same tasks.
//
//	e, err := embedded.Open(ctx, embedded.Options{Store: "sqlite://errand.db"})
//	if err != nil {
//		return err
//	}
//	defer e.Close()
//	e.Handle("app/send-receipt", func(ctx context.Context, t *embedded.Task) (json.RawMessage, error) {
//		return nil, send(ctx, t.Payload)
//	})
//	// Once: an instance, and its queue whose target is the function
//	// (INSTANCE_EXISTS and QUEUE_EXISTS on a later start).
//	_ = e.CreateInstance(ctx, "jobs")
//	_ = e.CreateQueue(ctx, "jobs", "receipts", embedded.QueueOptions{Function: "app/send-receipt"})
//	if _, err := e.Add(ctx, "jobs", "receipts", embedded.NewTask{Payload: json.RawMessage(`{"order":42}`)}); err != nil {
//		return err
//	}
//
// Several programs may embed the engine on one PostgreSQL store, beside
// `errand serve` nodes: they share the work as nodes do. A function's
// attempts are claimed only by the programs that registered it (and the
// nodes its connected workers are on); while nobody serves it, its tasks
// wait as scheduled without using an attempt.
package embedded

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/node"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/store/storeurl"
	"github.com/errandhq/errand/internal/task"
)

// Options configure an embedded engine. Zero values take the defaults
// noted.
type Options struct {
	// Store is sqlite://PATH (default sqlite://errand.db) or postgres://….
	// A SQLite store serves one node: while this engine is open its file
	// is held, and another engine, errand serve or errand dev on it is
	// refused (and this Open is refused while another holds it).
	Store string
	// Sync is SQLite's synchronous mode: NORMAL (default; an answered
	// write survives the process being killed) or FULL (it survives power
	// loss too).
	Sync string
	// Org is the organization the engine's calls act for (default
	// "default", and "dev", the emulator's one organization, with Dev);
	// HTTPHandler's callers act for the organization of their API key.
	Org string
	// Logger receives the engine's logs (default slog.Default()).
	Logger *slog.Logger
	// Dev applies the emulator's rules: instances are created on first use,
	// webhooks may be http and local, and HTTPHandler needs no API key.
	Dev bool

	clock    clock.Clock // tests: a fake clock
	st       store.Store // tests: an open store instead of Store
	outcomes bool        // tests: turn on the engine's outcome signal
}

// Engine is an errand engine running inside this program. It is safe for
// concurrent use.
type Engine struct {
	node     *node.Node
	eng      *engine.Engine
	outcomes *engine.OutcomeWatch // tests only (Options.outcomes)
	st       store.Store
	fns      *deliver.Functions
	org      string
	dev      bool
	log      *slog.Logger
	unlock   func() // gives the SQLite store back (storeurl.LockNode)

	// life ends when Close begins (end): calls are refused from then on.
	life      context.Context
	end       context.CancelFunc
	closeOnce sync.Once
	closeErr  error
}

// Open opens the store, migrating its schema if needed, and starts the
// engine's services (dispatcher, lease rescuer, retention cleaner). ctx
// bounds the opening only: the services run until Close.
func Open(ctx context.Context, o Options) (*Engine, error) {
	if o.Store == "" {
		o.Store = "sqlite://errand.db"
	}
	if o.Org == "" {
		o.Org = "default"
		if o.Dev {
			o.Org = auth.DevOrg
		}
	}
	if err := auth.ValidateOrg(o.Org); err != nil {
		return nil, publicError(err)
	}
	if _, ok := sqlite.SynchronousMode(o.Sync); !ok {
		return nil, publicError(task.FieldErrorf(task.CodeInvalidArgument, "Sync", "must be NORMAL or FULL (or empty for NORMAL), not %q", o.Sync))
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	st, unlock := o.st, func() {}
	if st == nil {
		var err error
		if unlock, err = storeurl.LockNode(o.Store, "an embedded errand engine"); err != nil {
			return nil, storeError(err)
		}
		if st, err = storeurl.Open(ctx, o.Store, storeurl.Options{Sync: o.Sync, Log: o.Logger}); err != nil {
			unlock()
			return nil, storeError(err)
		}
	}
	e := &Engine{st: st, fns: &deliver.Functions{}, org: o.Org, dev: o.Dev, log: o.Logger, unlock: unlock}
	e.life, e.end = context.WithCancel(context.Background())
	shared := o.st == nil && storeurl.Shared(o.Store)
	e.node = node.New(node.Config{Store: st, Clock: o.clock, Logger: o.Logger, Dev: o.Dev, Shared: shared, Functions: e.fns})
	e.eng = e.node.Engine
	if o.outcomes {
		e.outcomes = engine.WatchOutcomes(e.eng)
	}
	if err := e.node.Start(context.WithoutCancel(ctx)); err != nil {
		e.end()
		e.node.Close()
		st.Close()
		unlock()
		return nil, err
	}
	return e, nil
}

// Handler serves one function. It gets the task of the attempt, and a ctx
// that ends at the attempt's deadline or when Close begins. Returning nil
// succeeds the attempt with the result (nil for none), even after ctx
// ended at Close; returning an error fails it, and it is retried with the
// queue's backoff until its attempts are spent (at Close, the attempt is
// given back uncounted instead); returning Defer(d) tries again after d
// without using an attempt. Past the deadline, the attempt is timed out
// whatever the handler returns.
type Handler func(ctx context.Context, t *Task) (result json.RawMessage, err error)

// Handle serves the function name ("group/name": letters, digits, '-' and
// '_' on each side) in this program, replacing the handler it had. Any other
// name is refused with INVALID_ARGUMENT.
func (e *Engine) Handle(function string, h Handler) error {
	if err := e.refuse(); err != nil {
		return err
	}
	if h == nil {
		return publicError(task.FieldErrorf(task.CodeInvalidArgument, "handler", "must not be nil"))
	}
	if err := e.fns.Handle(function, func(ctx context.Context, t *task.Task) (json.RawMessage, error) {
		return h(ctx, publicTask(t))
	}); err != nil {
		return publicError(err)
	}
	e.node.Changed() // published: other nodes see the function served
	e.eng.Wake()     // its waiting tasks may be claimed now
	return nil
}

// Defer is the error a Handler returns to be tried again after d (at least
// a second) without using an attempt (when the queue's targetControl is
// on, the default).
func Defer(d time.Duration) error { return &deliver.DeferError{Delay: d} }

// HTTPHandler serves errand's v1 API (and /healthz) on this engine, for
// mounting on the program's own server. Calls need an API key of the store
// (`errand keys create`), except with Options.Dev.
func (e *Engine) HTTPHandler() http.Handler {
	// The engine's store: on a shared store it caches keys (auth.Keys).
	var a auth.Authenticator = auth.Keys{Store: e.eng.Store()}
	if e.dev {
		a = auth.Dev{}
	}
	h := e.node.Handler(node.HandlerConfig{Auth: a})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e.closed() {
			// The store is closed: answer as a node that is gone does
			// (UNAVAILABLE, which clients retry elsewhere), not with the
			// closed store's INTERNAL.
			code := errandapi.CodeUnavailable
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(errandapi.StatusOf(code))
			_ = json.NewEncoder(w).Encode(errandapi.ErrorResponse{Error: errandapi.ErrorDetail{Code: code, Message: "the embedded engine is closed"}})
			return
		}
		h.ServeHTTP(w, r)
	})
}
