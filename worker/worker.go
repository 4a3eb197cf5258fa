// Package worker serves errand function targets from a Go program: it
// connects to any errand node (dev or serve) over one long-lived WebSocket,
// registers functions under a worker group, and runs the attempts the node
// hands it, up to a number of slots at once.
//
//	w, err := worker.New("http://127.0.0.1:9191", "jobs", "app", worker.Options{Slots: 8})
//	...
//	w.Handle("send-receipt", func(ctx context.Context, t *worker.Task) (json.RawMessage, error) {
//		return json.RawMessage(`{"sent":true}`), send(ctx, t.Payload)
//	})
//	err = w.Run(ctx) // until ctx ends; reconnects by itself
//
// A queue whose target is {"function": "app/send-receipt"} then delivers
// each attempt to this handler. Returning (result, nil) succeeds the
// attempt and stores result as the task's result; an error fails it (it is
// retried with the queue's backoff); Defer(d) asks to be tried again after
// d without using an attempt; a panic fails it with the panic in the error.
// The handler's ctx ends at the attempt's deadline, and carries the
// attempt's delivery token: adds made with a client.Client and that ctx
// get depth = this task's + 1 and source "function".
//
// Pull serves a pull queue with the same handlers: it leases the queue's
// tasks through a client.Client, extends their leases while the handlers
// run and acks or releases each as its handler answered. WebhookHandler
// serves them as a webhook target: it checks each delivery's signature
// and answers as errand reads a webhook's answer.
//
// The package imports nothing internal to errand; the protocol it speaks
// is docs/workers.md.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/errandhq/errand/errandapi"
)

// Options configure a Worker; zero values take the defaults noted.
type Options struct {
	// APIKey is sent as `Authorization: Bearer <key>`; errand serve needs
	// a key with the write grant on the instance, errand dev none.
	APIKey string
	// Slots is how many attempts run at once (default 8, at most 1,000).
	// The node gives a worker no more than its queue's maxConcurrent and
	// its instance's maxInFlight allow (default 50, across all the
	// instance's push deliveries): raise maxInFlight for more.
	Slots int
	// Logger receives connection events and refused answers (default
	// slog.Default()).
	Logger *slog.Logger
	// HTTPClient makes the WebSocket handshake (default http.DefaultClient).
	HTTPClient *http.Client
	// MinBackoff and MaxBackoff bound the wait between reconnects
	// (defaults 200 ms and 10 s; jittered, doubling).
	MinBackoff, MaxBackoff time.Duration
}

// Task is the attempt a handler runs: the task as its target receives it.
type Task struct {
	ID           string
	Queue        string
	Name         string // "" when unnamed
	Attempt      int    // this attempt's number, from 1
	MaxAttempts  int
	RunAt        time.Time
	CreatedAt    time.Time
	DeadlineAt   time.Time
	Source       string
	Depth        int
	Params       json.RawMessage // nil when none
	DeadLetterOf string          // the failed task this is a dead letter of, or ""
	// Priority is the task's, 0–9 (higher goes first). A webhook
	// delivery's body (the contract's) does not carry it: 0 there.
	Priority int
	Payload  json.RawMessage
	// Function is the function's name within the group.
	Function string
}

// setOptional sets the fields the wire may leave out: "" for no name or
// dead-letter origin, nil for null params.
func (t *Task) setOptional(name, deadLetterOf *string, params json.RawMessage) {
	if name != nil {
		t.Name = *name
	}
	if deadLetterOf != nil {
		t.DeadLetterOf = *deadLetterOf
	}
	if len(params) > 0 && string(params) != "null" {
		t.Params = params
	}
}

// Handler serves one function (see the package doc for what its answer
// means). Its context ends at the attempt's deadline, or when the
// connection to the node is lost (context.Cause is then
// ErrConnectionLost).
type Handler func(ctx context.Context, t *Task) (result json.RawMessage, err error)

// DeferError asks for the attempt to be tried again after Delay without
// using an attempt.
type DeferError struct{ Delay time.Duration }

// Error implements error.
func (e *DeferError) Error() string { return "deferred for " + e.Delay.String() }

// Defer is the error a Handler returns to be tried again after d (at least
// a second) without using an attempt (when the queue's targetControl is
// on, the default; otherwise it counts as a failure).
func Defer(d time.Duration) error { return &DeferError{Delay: d} }

// Worker serves a group's functions for one instance.
type Worker struct {
	url      string
	instance string
	group    string
	o        Options
	log      *slog.Logger

	mu       sync.Mutex
	handlers map[string]Handler
	running  bool
}

// New returns a worker for the node at baseURL (http or https), the
// instance and the worker group. It makes no call: an instance or group
// name the node would refuse (1–100 letters, digits, '-' and '_',
// starting with a letter or digit) is refused here, INVALID_ARGUMENT
// naming the field.
func New(baseURL, instance, group string, o Options) (*Worker, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("worker: base URL %q: want http(s)://host[:port][/prefix]", baseURL)
	}
	if err := checkName("instance", instance); err != nil {
		return nil, err
	}
	if err := errandapi.CheckAPIKey(o.APIKey); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	if err := checkName("group", group); err != nil {
		return nil, err
	}
	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	u = u.JoinPath(errandapi.WorkerPath, instance) // escapes what the URL needs, once
	if err := loopDefaults(&o.Slots, &o.Logger, &o.MinBackoff, &o.MaxBackoff); err != nil {
		return nil, err
	}
	return &Worker{url: u.String(), instance: instance, group: group, o: o, handlers: map[string]Handler{},
		log: o.Logger.With("instance", instance, "group", group)}, nil
}

// Handle serves the function name (within the worker's group: "send-receipt"
// serves the target "app/send-receipt" for group app). Handle before Run
// (after it, Handle panics: the set of functions a connection serves is
// fixed); Run refuses a name that breaks the naming rule of New.
func (w *Worker) Handle(name string, h Handler) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running {
		panic("worker: Handle after Run")
	}
	w.handlers[name] = h
}

// Serve is New, Handle for each of handlers and Run.
func Serve(ctx context.Context, baseURL, instance, group string, o Options, handlers map[string]Handler) error {
	w, err := New(baseURL, instance, group, o)
	if err != nil {
		return err
	}
	for name, h := range handlers {
		w.Handle(name, h)
	}
	return w.Run(ctx)
}

// Run connects and serves until ctx ends, reconnecting with backoff when
// the connection drops. When ctx ends, attempts already running finish and
// their answers are sent; new ones are deferred. Run returns nil then, or
// at once the refusal that reconnecting cannot fix (a bad key, a missing
// grant) as a *CloseError or *errandapi.Error. A function name the node
// would refuse is refused before connecting, INVALID_ARGUMENT naming it.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	err := w.checkHandlers()
	w.running = err == nil
	w.mu.Unlock()
	if err != nil {
		return err
	}
	wait := w.o.MinBackoff
	for {
		connected, err := w.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if permanent(err) {
			return err
		}
		if connected {
			wait = w.o.MinBackoff
			w.log.Warn("worker connection lost; reconnecting", "err", err, "in", wait)
		} else {
			w.log.Warn("worker could not connect; trying again", "url", w.url, "err", err, "in", wait)
		}
		if !pause(ctx, wait) {
			return nil
		}
		wait = min(2*wait, w.o.MaxBackoff)
	}
}

// loopDefaults sets the defaults of a worker's or a Pull's slots (8),
// logger and backoff bounds (200 ms to 10 s), and refuses slots out of
// range.
func loopDefaults(slots *int, log **slog.Logger, minB, maxB *time.Duration) error {
	if *slots == 0 {
		*slots = 8
	}
	if *slots < 1 || *slots > errandapi.MaxWorkerSlots {
		return fmt.Errorf("worker: %w", errandapi.NewError(errandapi.CodeInvalidArgument,
			fmt.Sprintf("Slots %d: must be 1–%d", *slots, errandapi.MaxWorkerSlots)))
	}
	if *log == nil {
		*log = slog.Default()
	}
	if *minB <= 0 {
		*minB = 200 * time.Millisecond
	}
	if *maxB <= 0 {
		*maxB = 10 * time.Second
	}
	return nil
}

// pause waits about wait (half of it plus a random share of the other
// half) and reports false if ctx ended first.
func pause(ctx context.Context, wait time.Duration) bool {
	t := time.NewTimer(wait/2 + rand.N(wait/2+1))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// checkHandlers checks the handlers' names and count as the node checks
// a hello's; w.mu is held.
func (w *Worker) checkHandlers() error {
	if len(w.handlers) == 0 {
		return errors.New("worker: no handler: call Handle before Run")
	}
	if len(w.handlers) > maxFunctions {
		return fmt.Errorf("worker: %w", errandapi.NewError(errandapi.CodeInvalidArgument,
			fmt.Sprintf("functions: %d handlers, at most %d per worker", len(w.handlers), maxFunctions)))
	}
	names := make([]string, 0, len(w.handlers))
	for n := range w.handlers {
		names = append(names, n)
	}
	sort.Strings(names) // the same name reported every time
	for _, n := range names {
		if err := checkName("function", n); err != nil {
			return err
		}
	}
	return nil
}

// ErrConnectionLost is the cause (context.Cause) of a handler's context
// that ended because the worker's connection to the node did: the node
// fails the attempt and tries the task again, so the handler's answer
// would not be taken. A context ended at the attempt's deadline has the
// cause context.DeadlineExceeded.
var ErrConnectionLost = errors.New("worker: the connection to the node was lost; the node tries the task again")

// CloseError is the node's refusal of the connection: the v1 error it gave
// as the close reason.
type CloseError struct {
	Status websocket.StatusCode
	errandapi.ErrorDetail
	// Truncated reports that the node cut Message short to fit the 123
	// bytes of a WebSocket close reason; Message then ends, at a word's
	// end, with "…".
	Truncated bool
}

// Error implements error.
func (e *CloseError) Error() string {
	s := fmt.Sprintf("worker: the node closed the connection: %s: %s", e.Code, e.Message)
	if e.Truncated {
		s += " (the node cut its message short to fit a WebSocket close reason)"
	}
	return s
}

// permanent reports whether err is a refusal that reconnecting cannot fix.
func permanent(err error) bool {
	var ce *CloseError
	if errors.As(err, &ce) {
		switch ce.Code {
		case errandapi.CodeInvalidArgument, errandapi.CodeUnauthenticated, errandapi.CodePermissionDenied, errandapi.CodeNotFound:
			return true
		}
	}
	var ae *errandapi.Error
	if errors.As(err, &ae) {
		return ae.Status/100 == 4 && ae.Status != http.StatusTooManyRequests
	}
	return false
}
