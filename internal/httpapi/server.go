// Package httpapi is errand's HTTP layer: the v1 API, thin handlers over the
// engine, the auth middleware, and one table from error codes to statuses.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// Config configures a Server.
type Config struct {
	Engine *engine.Engine
	Auth   auth.Authenticator // default auth.Dev{}
	Logger *slog.Logger
	// Extra mounts more handlers (metrics, console, MCP) on the same mux;
	// each pattern is registered as given.
	Extra map[string]http.Handler
	// Hosts, when not nil, are the only Host names the server answers
	// (LoopbackHosts for a server on loopback); nil answers any Host.
	// Cross-site state-changing requests are refused either way.
	Hosts []string
	// Workers, when set, serves GET /v1/workers/{instance}: function
	// workers connect there and are handed their functions' attempts.
	Workers *deliver.Workers
}

// Server serves the v1 API.
type Server struct {
	eng  *engine.Engine
	auth auth.Authenticator
	log  *slog.Logger
	mux  *http.ServeMux
	// handler is mux behind the Host and cross-origin guard.
	handler http.Handler
	hosts   *hostGuard
	// limits enforces each instance's rateLimit setting.
	limits *limiter
	// workers is the node's registry of connected function workers.
	workers *deliver.Workers
	// patterns are the "METHOD /path" patterns of the server's own routes,
	// in the order registered (RoutePatterns).
	patterns []string
	// channelAuth admits subscribers by API key or subscribe token.
	channelAuth auth.Authenticator
	// unavailable rate-limits the log line of answers the store's outage
	// made 503.
	unavailable everyLog
}

// Route is one v1 route: the method and pattern as registered on the mux,
// and the role the caller needs on the {instance} of the path (RoleNone for
// routes without an instance, which check their own grants).
type Route struct {
	Method  string
	Pattern string
	Role    auth.Role
	handle  func(s *Server, w http.ResponseWriter, r *http.Request, c *call)
}

// call is what every handler gets: the caller and the instance of the path.
type call struct {
	p        *auth.Principal
	instance string
}

// queue names the path's queue of the caller's instance.
func (c *call) queue(r *http.Request) engine.QueueRef {
	return engine.QueueRef{Org: c.p.Org, Instance: c.instance, Queue: r.PathValue("queue")}
}

// task names the path's task of the caller's instance.
func (c *call) task(r *http.Request) engine.TaskRef {
	return engine.TaskRef{Org: c.p.Org, Instance: c.instance, ID: r.PathValue("id")}
}

// Routes is THE route table of the v1 API.
var Routes = []Route{
	{"GET", "/v1/instances", auth.RoleNone, (*Server).listInstances},
	{"POST", "/v1/instances", auth.RoleNone, (*Server).createInstance},
	{"DELETE", "/v1/instances/{instance}", auth.RoleFull, (*Server).deleteInstance},
	{"GET", "/v1/keys/self", auth.RoleNone, (*Server).keySelf},

	{"GET", "/v1/tasks/{instance}/queues", auth.RoleRead, (*Server).listQueues},
	{"POST", "/v1/tasks/{instance}/queues", auth.RoleFull, (*Server).createQueue},
	{"GET", "/v1/tasks/{instance}/queues/{queue}", auth.RoleRead, (*Server).getQueue},
	{"GET", "/v1/tasks/{instance}/queues/{queue}/activity", auth.RoleRead, (*Server).queueActivity},
	{"PATCH", "/v1/tasks/{instance}/queues/{queue}", auth.RoleFull, (*Server).patchQueue},
	{"DELETE", "/v1/tasks/{instance}/queues/{queue}", auth.RoleFull, (*Server).deleteQueue},
	{"POST", "/v1/tasks/{instance}/queues/{queue}/purge", auth.RoleFull, (*Server).purgeQueue},
	{"POST", "/v1/tasks/{instance}/queues/{queue}/tasks", auth.RoleWrite, (*Server).addTasks},
	{"GET", "/v1/tasks/{instance}/queues/{queue}/tasks", auth.RoleRead, (*Server).listTasks},
	{"POST", "/v1/tasks/{instance}/queues/{queue}/lease", auth.RoleWrite, (*Server).lease},
	{"POST", "/v1/tasks/{instance}/queues/{queue}/ack", auth.RoleWrite, (*Server).ackMany},

	{"GET", "/v1/tasks/{instance}/tasks/{id}", auth.RoleRead, (*Server).getTask},
	{"DELETE", "/v1/tasks/{instance}/tasks/{id}", auth.RoleFull, (*Server).deleteTask},
	{"PATCH", "/v1/tasks/{instance}/tasks/{id}", auth.RoleWrite, (*Server).patchTask},
	{"POST", "/v1/tasks/{instance}/tasks/{id}/run", auth.RoleWrite, (*Server).runTask},
	{"POST", "/v1/tasks/{instance}/tasks/{id}/cancel", auth.RoleWrite, (*Server).cancelTask},
	{"POST", "/v1/tasks/{instance}/tasks/{id}/retry", auth.RoleWrite, (*Server).retryTask},
	{"POST", "/v1/tasks/{instance}/tasks/{id}/ack", auth.RoleWrite, (*Server).ack},
	{"POST", "/v1/tasks/{instance}/tasks/{id}/extend", auth.RoleWrite, (*Server).extend},
	{"POST", "/v1/tasks/{instance}/tasks/{id}/release", auth.RoleWrite, (*Server).release},

	{"GET", "/v1/tasks/{instance}/triggers", auth.RoleRead, (*Server).listTriggers},
	{"POST", "/v1/tasks/{instance}/triggers", auth.RoleFull, (*Server).createTrigger},
	{"GET", "/v1/tasks/{instance}/triggers/{id}", auth.RoleRead, (*Server).getTrigger},
	{"PATCH", "/v1/tasks/{instance}/triggers/{id}", auth.RoleFull, (*Server).patchTrigger},
	{"DELETE", "/v1/tasks/{instance}/triggers/{id}", auth.RoleFull, (*Server).deleteTrigger},

	{"GET", "/v1/tasks/{instance}/settings", auth.RoleRead, (*Server).getSettings},
	{"PATCH", "/v1/tasks/{instance}/settings", auth.RoleFull, (*Server).patchSettings},
	{"GET", "/v1/tasks/{instance}/settings/webhook-key", auth.RoleFull, (*Server).revealWebhookKey},
	{"POST", "/v1/tasks/{instance}/settings/webhook-key/rotate", auth.RoleFull, (*Server).rotateWebhookKey},
	{"GET", "/v1/tasks/{instance}/usage", auth.RoleRead, (*Server).getUsage},
	{"GET", "/v1/tasks/{instance}/functions", auth.RoleRead, (*Server).listFunctions},

	{"GET", "/v1/workers/{instance}", auth.RoleWrite, (*Server).workerConnect},

	{"GET", "/v1/channels/{instance}/{channel}", auth.RoleRead, (*Server).subscribe},
	{"POST", "/v1/channels/{instance}/{channel}/token", auth.RoleRead, (*Server).channelToken},
}

// New builds the server and its mux.
func New(cfg Config) *Server {
	if cfg.Auth == nil {
		cfg.Auth = auth.Dev{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{eng: cfg.Engine, auth: cfg.Auth, log: cfg.Logger, mux: http.NewServeMux(), hosts: newHostGuard(cfg.Hosts), workers: cfg.Workers}
	s.handler = observe(s.guard(s.mux), cfg.Engine.Metrics().HTTPRequests, s.log)
	s.channelAuth = auth.KeyOrChannelToken{Keys: cfg.Auth, Tokens: auth.ChannelTokens{Store: cfg.Engine.Store(), Clock: cfg.Engine.Clock()}}
	s.limits = newLimiter(cfg.Engine.Clock(), cfg.Engine.RateLimit, cfg.Engine.APICallGrant)
	for _, rt := range Routes {
		s.handle(rt.Method+" "+rt.Pattern, s.wrap(rt))
	}
	for _, rt := range OpsRoutes {
		s.handle(rt.Method+" "+rt.Pattern, s.wrapOps(rt))
	}
	s.handle("POST /v1/hooks/{instance}/{hook}", http.HandlerFunc(s.hook))     // no key: see hooks.go
	s.handle("GET /v1/hooks/{instance}/{hook}", http.HandlerFunc(s.hookCheck)) // no key: a sender's check of the URL
	s.handle("GET "+OpenAPIPath, http.HandlerFunc(serveOpenAPI))               // no key: see openapi.go
	// GET /livez asks nothing of the store: a liveness probe that restarts
	// the node on a failure must not restart every node in a database
	// outage, which they ride out. GET /healthz is readiness.
	s.handle("GET /livez", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	}))
	s.handle("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.eng.Ping(ctx); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ok": false, "store": "unavailable"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "store": "ok"})
	}))
	for pattern, h := range cfg.Extra {
		s.mux.Handle(pattern, h)
	}
	s.mux.HandleFunc("/", s.noRoute)
	return s
}

// handle registers h under pattern ("METHOD /path") on the mux and in the
// server's route list.
func (s *Server) handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
	s.patterns = append(s.patterns, pattern)
}

// RoutePatterns returns the "METHOD /path" pattern of every route the
// server itself serves (the v1 and operations APIs, hooks, /healthz and
// the OpenAPI document), as registered on its mux; the handlers of
// Config.Extra are not in it.
func (s *Server) RoutePatterns() []string { return slices.Clone(s.patterns) }

// pathNotFound returns the NOT_FOUND of a {queue} or {id} of the path that
// cannot name anything that exists (a NUL byte, invalid UTF-8 or any other
// character outside the names' alphabet), so the call is answered before a
// store sees the value, as a missing one is: naming it (a rule's id under
// /triggers/, a task's elsewhere). It is nil when both are well formed or
// absent.
func pathNotFound(r *http.Request, instance string) error {
	if q := r.PathValue("queue"); q != "" && task.ValidateQueueName(q, "queue") != nil {
		return task.NotFoundIn("queue", q, instance)
	}
	if id := r.PathValue("id"); id != "" && !task.ValidID(id) {
		what := "task"
		if strings.Contains(r.Pattern, "/triggers/") {
			what = "trigger"
		}
		return task.NotFoundIn(what, id, instance)
	}
	return nil
}

// probeMethods are the methods noRoute tries when a path matched no route.
var probeMethods = []string{"DELETE", "GET", "PATCH", "POST", "PUT"}

// noRoute answers a request no route took: 405 with Allow when the path is
// known under other methods, NOT_FOUND otherwise.
// Under /api/ it answers in the operations API's shape (lowercase codes).
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	write := s.writerFor(r)
	var allow []string
	for _, m := range probeMethods {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
			if m == "GET" {
				allow = append(allow, "HEAD")
			}
		}
	}
	if len(allow) == 0 {
		write(w, r, task.Errorf(task.CodeNotFound, "no route %s %s", r.Method, r.URL.Path))
		return
	}
	slices.Sort(allow)
	w.Header().Set("Allow", strings.Join(allow, ", "))
	write(w, r, task.Errorf(task.CodeMethodNotAllowed, "%s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, strings.Join(allow, ", ")))
}

// writerFor is how r's errors are written: the operations API's shape
// under /api/, the v1 API's elsewhere.
func (s *Server) writerFor(r *http.Request) func(http.ResponseWriter, *http.Request, error) {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		return s.writeOpsError
	}
	return s.writeError
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// wrap authenticates the caller, checks its grant on the path's instance
// and takes the call from the instance's rate limit. A missing, malformed,
// unknown or revoked key is UNAUTHENTICATED; a caller with no grant at all
// on an instance is told NOT_FOUND, exactly as for an instance that does
// not exist; a grant too small is PERMISSION_DENIED; a call past the
// instance's rateLimit is RATE_LIMITED with Retry-After.
func (s *Server) wrap(rt Route) http.Handler {
	limited := !unlimitedRoutes[rt.Method+" "+rt.Pattern]
	tokens := tokenRoutes[rt.Method+" "+rt.Pattern]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authn := s.auth
		if tokens {
			authn = s.channelAuth
		}
		p := s.authenticateWith(authn, w, r, s.writeError)
		if p == nil {
			return
		}
		c := &call{p: p, instance: r.PathValue("instance")}
		if rt.Role != auth.RoleNone {
			if err := task.ValidateQueueName(c.instance, "instance"); err != nil {
				s.writeError(w, r, task.InstanceNotFound(c.instance))
				return
			}
			if err := pathNotFound(r, c.instance); err != nil {
				s.writeError(w, r, err)
				return
			}
			switch have := p.RoleOn(c.instance); {
			case have == auth.RoleNone:
				s.writeError(w, r, task.InstanceNotFound(c.instance))
				return
			case have < rt.Role:
				s.writeError(w, r, task.Errorf(task.CodePermissionDenied, "this call needs the %s grant on instance %s; the key has %s", rt.Role, task.Quote(c.instance), have))
				return
			}
			// The settings routes are exempt for a caller who can change
			// the limit (full), not for every reader.
			if (limited || p.RoleOn(c.instance) < auth.RoleFull) && !s.takeCall(w, r, p.Org, c.instance, s.writeError) {
				return
			}
		}
		if err := checkQuery(r, rt.Method+" "+rt.Pattern); err != nil {
			s.writeError(w, r, err)
			return
		}
		rt.handle(s, w, r, c)
	})
}
