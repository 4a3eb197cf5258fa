// Package node assembles one errand node from its parts, in one place for
// `errand serve`, `errand dev` and the embedded engine: the store, the
// engine and its services, the delivery mux (webhooks; functions served in
// process or by connected workers; channels), the HTTP API with
// metrics, and the publisher of what this node's workers serve (the
// store's workers table, read by every node).
package node

import (
	"context"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/console"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/httpapi"
	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/inproc"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// Config is what differs between the modes.
type Config struct {
	Store  store.Store
	Clock  clock.Clock // default the real clock
	Logger *slog.Logger
	// Dev is the emulator: instances on first use, every attempt logged,
	// http and local webhooks (Guard is then ignored).
	Dev bool
	// Guard vets webhook addresses (serve); nil with Dev.
	Guard *deliver.Guard
	// Shared: other nodes write to the same store (PostgreSQL): sleeping
	// services look at it every second and the clock is the database's.
	Shared bool
	// Functions are served in process (the embedded engine); nil for none.
	Functions *deliver.Functions
	// Ops configures the operations API's jobs.
	Ops engine.OpsConfig
	// Channels configures channel targets (retention, subscriber buffers).
	Channels engine.ChannelsConfig
	// StopGrace is engine.Config.StopGrace: how long Close lets push
	// attempts in flight finish.
	StopGrace time.Duration
}

// Node is one assembled node. Start runs it; Close stops it.
type Node struct {
	Engine  *engine.Engine
	Workers *deliver.Workers
	webhook *deliver.Webhook
	fns     *deliver.Functions
	st      store.Store
	log     *slog.Logger
	rules   task.URLRules
	id      string
	console *console.Console
	// api is the handler built last by Handler: the console calls it.
	api atomic.Pointer[httpapi.Server]

	changed chan struct{}
	// published, if set, is told after each write of the node's rows of
	// the workers table (a test signal; nil in production).
	published func()
	cancel    context.CancelFunc
	done      chan struct{}
	stopped   sync.Once
}

// publishEvery is how often a node refreshes its rows of the workers table
// (engine.WorkersQuiet is how long they count).
const publishEvery = 5 * time.Second

// New builds a node; nothing runs until Start.
func New(cfg Config) *Node {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	n := &Node{Workers: &deliver.Workers{}, fns: cfg.Functions, st: cfg.Store, log: cfg.Logger,
		id: id.Secret(8), changed: make(chan struct{}, 1)}
	if cfg.Dev {
		n.rules = task.URLRules{AllowHTTP: true}
		n.webhook = deliver.NewWebhook(deliver.WebhookOptions{})
	} else {
		if cfg.Guard == nil {
			cfg.Guard = deliver.NewGuard(nil)
		}
		n.rules = cfg.Guard.URLRules()
		n.webhook = deliver.NewWebhook(deliver.WebhookOptions{Guard: cfg.Guard})
	}
	channel := &deliver.Channel{Store: cfg.Store}
	backstop := time.Duration(0) // the engine's default: a lone node wakes itself
	if cfg.Shared {
		backstop = time.Second
	}
	n.Engine = engine.New(engine.Config{
		Store: cfg.Store, Clock: cfg.Clock, Logger: cfg.Logger, Dev: cfg.Dev, URLRules: n.rules,
		Backstop: backstop, DatabaseClock: cfg.Shared, Ops: cfg.Ops, Node: n.id, Channels: cfg.Channels, StopGrace: cfg.StopGrace,
		InstanceDeleted: func(id string) { n.Workers.CloseInstance(id, "the instance was deleted") },
		Deliverer:       &deliver.Mux{Webhook: n.webhook, Function: &deliver.FunctionRoutes{InProcess: cfg.Functions, Workers: n.Workers}, Channel: channel},
	})
	n.console = console.New(console.Config{
		API: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if inproc.CreatesNone(r.Context()) {
				r = r.WithContext(engine.WithoutCreate(r.Context()))
			}
			if api := n.api.Load(); api != nil {
				api.ServeHTTP(w, r)
				return
			}
			http.NotFound(w, r)
		}),
		Dev: cfg.Dev, Changes: n.Engine.Changes, Clock: n.Engine.Clock(), Logger: cfg.Logger, Sessions: cfg.Store,
	})
	channel.Appended = n.Engine.ChannelAppended
	n.Workers.OnFree = n.Engine.Wake
	n.Workers.OnChange = n.Changed
	n.Workers.Now = func() int64 { return n.Engine.Clock().Now().UnixMilli() }
	return n
}

// URLRules are the webhook rules the node's engine applies.
func (n *Node) URLRules() task.URLRules { return n.rules }

// Changed tells the node that what it serves changed (a worker came or
// left, an in-process function was registered): it publishes at once.
func (n *Node) Changed() {
	select {
	case n.changed <- struct{}{}:
	default:
	}
}

// Start runs the engine's services and the publisher until Close. ctx
// bounds the start; the node runs until Close.
func (n *Node) Start(ctx context.Context) error {
	if err := n.Engine.Start(ctx); err != nil {
		return err
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	n.cancel, n.done = cancel, make(chan struct{})
	go func() {
		defer close(n.done)
		n.publish(pctx)
	}()
	return nil
}

// HandlerConfig is what the HTTP API needs beyond the node.
type HandlerConfig struct {
	Auth  auth.Authenticator
	Hosts []string
	// Extra mounts more handlers (MCP, console) beside /metrics.
	Extra map[string]http.Handler
}

// Handler returns the node's HTTP API: the v1 routes, the worker
// endpoint, /healthz, /metrics and the web console at /console/ (which
// calls this same handler in process with each session's key; with more
// than one handler built, the last).
func (n *Node) Handler(c HandlerConfig) *httpapi.Server {
	extra := map[string]http.Handler{"GET /metrics": n.Engine.Metrics().Handler(), console.Prefix: n.console}
	maps.Copy(extra, c.Extra)
	api := httpapi.New(httpapi.Config{Engine: n.Engine, Auth: c.Auth, Logger: n.log, Hosts: c.Hosts, Extra: extra, Workers: n.Workers})
	n.api.Store(api)
	return api
}

// CloseStreams ends the node's long-lived streams: the console's live
// counts, the channel subscriptions (each subscriber told to resume
// elsewhere) and the leases waiting for tasks (answered with none). An HTTP server's Shutdown waits for requests in flight, so
// serve registers it with RegisterOnShutdown. Close does it too.
func (n *Node) CloseStreams() {
	n.console.Close()
	n.Engine.EndSubscriptions()
	n.Engine.EndLongPolls()
}

// Close stops the node: the engine (attempts in flight finish or are
// given back), then the worker connections, the publisher (which removes
// the node's rows) and the webhook client. The store stays open.
func (n *Node) Close() {
	n.stopped.Do(func() {
		n.CloseStreams()
		n.Engine.Stop()
		n.Workers.CloseAll("the node is shutting down")
		if n.cancel != nil {
			n.cancel()
			<-n.done
		}
		n.webhook.Close()
	})
}

// publish keeps this node's rows of the workers table: at once when what
// it serves changes, and every publishEvery so they stay live; at the end
// it removes them.
func (n *Node) publish(ctx context.Context) {
	clk := n.Engine.Clock()
	put := func(ctx context.Context, served map[string]map[string]int) {
		now := clk.Now().UnixMilli()
		err := n.st.WorkersPut(ctx, &store.WorkersPutParams{Node: n.id, Served: served, Now: now, Forget: now - time.Hour.Milliseconds()})
		if err != nil && ctx.Err() == nil {
			n.log.Warn("publishing the functions this node serves failed", "err", err)
		}
		if n.published != nil {
			n.published()
		}
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		put(ctx, nil)
	}()
	had := false
	for {
		served := n.Workers.Served()
		if n.fns != nil {
			if own := n.fns.Free(""); len(own) > 0 {
				served[store.AllInstances] = map[string]int{}
				for fn := range own {
					served[store.AllInstances][fn] = 1
				}
			}
		}
		n.sweepGone(ctx, served)
		if len(served) > 0 || had {
			put(ctx, served)
			had = len(served) > 0
		}
		select {
		case <-ctx.Done():
			return
		case <-n.changed:
		case <-clk.After(publishEvery):
		}
	}
}

// sweepGone ends the worker connections and channel subscriptions this
// node holds for an instance that another node deleted (a delete through
// this node ends them at once), and drops it from served: each instance
// in use here is read again every round of publish.
func (n *Node) sweepGone(ctx context.Context, served map[string]map[string]int) {
	ids := n.Engine.SubscribedInstances()
	for id := range served {
		if id != store.AllInstances {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		if _, err := n.st.InstanceGetByID(ctx, id); task.IsCode(err, task.CodeNotFound) {
			n.log.Info("an instance in use on this node was deleted: its workers' connections and channel subscriptions end", "instance", id)
			n.Engine.InstanceGone(id)
			delete(served, id)
		}
	}
}
