// Package console is errand's web console, served by every node at
// /console/: server-rendered pages (html/template, a little JavaScript for
// the live counts), all files embedded in the binary.
//
// The console holds no rule of its own. Every page and every button is a
// call to the node's v1 API or operations API, made in process with the
// session's key (internal/inproc): the key's grants, the instance's rate
// limit, validation and every refusal are the API's, exactly as for any
// other caller. The console only decides what to show, hiding what the
// key's grants (GET /v1/keys/self) do not allow.
package console

import (
	"embed"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Prefix is where a node mounts the console.
const Prefix = "/console/"

// Config configures a Console.
type Config struct {
	// API is the node's whole HTTP handler (v1 and operations API); every
	// call of the console is served by it in process.
	API http.Handler
	// Dev is errand dev: no login, the emulator's one organization.
	Dev bool
	// Changes returns a channel closed at the next change the engine sees
	// (a task added, run, cancelled; a queue changed): the live counts are
	// sent again then. nil: only every LiveEvery.
	Changes func() <-chan struct{}
	// LiveEvery is how often the live counts are sent even without a
	// change (attempt outcomes, other nodes); default 2 s.
	LiveEvery time.Duration
	Clock     clock.Clock
	Logger    *slog.Logger
	// SessionTTL is how long a login lasts (default 12 h).
	SessionTTL time.Duration
	// Sessions keeps the logins of serve (unused in dev): the store every
	// node shares, so a login holds on every node and a logout ends it on
	// all of them.
	Sessions store.ConsoleSessionStore
}

// Console serves the console's pages.
type Console struct {
	cfg   Config
	mux   *http.ServeMux
	pages pages
	// devSecret keys the CSRF tokens of dev, where no API key does.
	devSecret string

	// done ends the live streams on Close (an HTTP server's Shutdown does
	// not cancel requests in flight).
	done     chan struct{}
	stopOnce sync.Once
}

// New returns the console.
func New(cfg Config) *Console {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.LiveEvery == 0 {
		cfg.LiveEvery = 2 * time.Second
	}
	if cfg.SessionTTL == 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	c := &Console{cfg: cfg, mux: http.NewServeMux(), pages: parsePages(), devSecret: id.Secret(32), done: make(chan struct{})}
	c.routes()
	return c
}

// ServeHTTP serves one console request with the security headers every
// answer carries.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secure(w.Header())
	c.mux.ServeHTTP(w, r)
}

// Close ends the live streams, so that an HTTP server's Shutdown does not
// wait for them.
func (c *Console) Close() { c.stopOnce.Do(func() { close(c.done) }) }

// routes registers every page and action. GET pages show; POST actions
// change something, need the session's CSRF token and answer with a
// redirect (or the page again with the API's refusal).
func (c *Console) routes() {
	static := http.FileServerFS(staticFS)
	c.mux.Handle("GET /console/static/", http.StripPrefix("/console/", static))
	c.mux.HandleFunc("GET /console/login", c.loginPage)
	c.mux.HandleFunc("POST /console/login", c.login)
	c.mux.HandleFunc("POST /console/logout", c.logout)

	c.page("GET /console/{$}", c.instancesPage)
	c.action("POST /console/instances", c.createInstance)
	c.page("GET /console/i/{instance}/{$}", c.queuesPage)
	c.page("GET /console/i/{instance}/live", c.live)
	c.action("POST /console/i/{instance}/queues", c.createQueue)
	c.page("GET /console/i/{instance}/settings", c.settingsPage)
	c.action("POST /console/i/{instance}/settings", c.updateSettings)
	c.page("GET /console/i/{instance}/settings/webhook-key", c.keyPage)
	c.action("POST /console/i/{instance}/settings/webhook-key", c.revealKey)
	c.action("POST /console/i/{instance}/settings/webhook-key/rotate", c.rotateKey)
	c.page("GET /console/i/{instance}/confirm/{what}", c.confirmPage)
	c.page("GET /console/i/{instance}/q/{queue}/{$}", c.queuePage)
	c.page("GET /console/i/{instance}/q/{queue}/confirm/{what}", c.confirmPage)
	c.action("POST /console/i/{instance}/q/{queue}/settings", c.updateQueue)
	c.action("POST /console/i/{instance}/q/{queue}/pause", c.pauseQueue(true))
	c.action("POST /console/i/{instance}/q/{queue}/resume", c.pauseQueue(false))
	c.action("POST /console/i/{instance}/q/{queue}/purge", c.purgeQueue)
	c.action("POST /console/i/{instance}/q/{queue}/delete", c.deleteQueue)
	c.action("POST /console/i/{instance}/q/{queue}/tasks", c.addTask)
	c.page("GET /console/i/{instance}/q/{queue}/dead", c.deadPage)
	c.action("POST /console/i/{instance}/q/{queue}/replay", c.replay)
	c.page("GET /console/i/{instance}/t/{id}", c.taskPage)
	c.page("GET /console/i/{instance}/t/{id}/confirm-delete", c.confirmTaskDelete)
	c.action("POST /console/i/{instance}/t/{id}/{op}", c.taskOp)
	c.page("GET /console/i/{instance}/jobs/{id}", c.jobPage)
	c.page("GET /console/i/{instance}/rules", c.rulesPage)
	c.page("GET /console/i/{instance}/functions", c.functionsPage)
	c.action("POST /console/i/{instance}/rules", c.createRule)
	c.page("GET /console/i/{instance}/rules/{id}/confirm-delete", c.confirmRuleDelete)
	c.action("POST /console/i/{instance}/rules/{id}/delete", c.deleteRule)
	c.action("POST /console/i/{instance}/rules/{id}/enable", c.switchRule(true))
	c.action("POST /console/i/{instance}/rules/{id}/disable", c.switchRule(false))
	c.page("/console/i/{instance}/", c.notFound)
	c.mux.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) { c.notFound(w, r, nil) })
}
