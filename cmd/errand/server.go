package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/pflag"

	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/httpapi"
	"github.com/errandhq/errand/internal/mcp"
	"github.com/errandhq/errand/internal/node"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
)

type serveConfig struct {
	ln   net.Listener // opened before the store, so a taken port fails first
	addr string       // --addr as given (listenHosts reads its host)
	// allowHosts are --allow-host's names, answered besides the loopback
	// names by a server on loopback.
	allowHosts []string
	store      store.Store
	log        *slog.Logger
	dev        bool
	// auth makes the authenticator from the engine's store, which on a
	// shared store caches API keys (see auth.Keys).
	auth  func(store.KeyStore) auth.Authenticator
	guard *deliver.Guard // nil in dev: any address
	// shared: other nodes write to the same store, so sleeping services
	// look at it at least every second.
	shared bool
	stdout io.Writer
	// timeouts of the HTTP server; zero values take defaultTimeouts.
	timeouts httpTimeouts
	ops      engine.OpsConfig
	channels engine.ChannelsConfig
	// grace is how long a stop lets deliveries in flight finish.
	grace time.Duration
}

// httpTimeouts bound how long a client may hold a connection.
type httpTimeouts struct {
	// Read is the whole request, headers and body: 100 tasks of 64 KiB
	// payload and params (the 16 MiB body cap) at 1 Mbit/s take ~130 s.
	Read time.Duration
	// Idle is how long a kept-alive connection waits for its next request.
	Idle time.Duration
}

// defaultTimeouts are the timeouts of dev and serve.
var defaultTimeouts = httpTimeouts{Read: 150 * time.Second, Idle: 120 * time.Second}

// addTimeoutFlags registers --read-timeout and --idle-timeout on fs.
func addTimeoutFlags(fs *pflag.FlagSet, t *httpTimeouts) {
	*t = defaultTimeouts
	fs.DurationVar(&t.Read, "read-timeout", defaultTimeouts.Read, "longest time a client may take to send a whole request, body included")
	fs.DurationVar(&t.Idle, "idle-timeout", defaultTimeouts.Idle, "longest time a kept-alive connection may wait for its next request")
}

// checkNodeFlags refuses, as usage errors and before anything is opened,
// the values of dev's and serve's flags that would otherwise be replaced
// silently (a timeout of 0 or less means none to net/http; a retention
// of 0 or less the default) or refused only after the store was opened.
func checkNodeFlags(sync string, t httpTimeouts, ch engine.ChannelsConfig, grace time.Duration, ops *opsFlags, dev bool) error {
	switch {
	case grace < 0:
		return usageErrorf("--shutdown-grace %v: must be 0 or more", grace)
	case t.Read <= 0:
		return usageErrorf("--read-timeout %v: must be more than 0 (it bounds a client sending its request)", t.Read)
	case t.Idle <= 0:
		return usageErrorf("--idle-timeout %v: must be more than 0", t.Idle)
	case ch.Keep < 1:
		return usageErrorf("--channel-keep %d: must be at least 1", ch.Keep)
	case ch.MaxAge <= 0:
		return usageErrorf("--channel-max-age %v: must be more than 0", ch.MaxAge)
	}
	if _, ok := sqlite.SynchronousMode(sync); !ok {
		return usageErrorf("--sync %q: want NORMAL or FULL", sync)
	}
	return ops.check(dev)
}

// defaultStopGrace is --shutdown-grace's default: long enough for most
// webhooks to answer, well inside a Kubernetes pod's 30 s to stop.
const defaultStopGrace = 10 * time.Second

// addGraceFlag registers --shutdown-grace on fs.
func addGraceFlag(fs *pflag.FlagSet, d *time.Duration) {
	fs.DurationVar(d, "shutdown-grace", defaultStopGrace, "on SIGTERM, how long push attempts in flight may finish before the rest are cut and handed back (0: at once)")
}

// addChannelFlags registers the channel retention flags on fs.
func addChannelFlags(fs *pflag.FlagSet, c *engine.ChannelsConfig) {
	fs.IntVar(&c.Keep, "channel-keep", engine.DefaultChannelKeep, "messages each channel keeps for subscribers that resume, at the least (with --channel-max-age, whichever keeps more)")
	fs.DurationVar(&c.MaxAge, "channel-max-age", engine.DefaultChannelMaxAge, "how long each channel keeps its messages for subscribers that resume, at the least")
}

// listenHosts is Config.Hosts for a server listening on ln: a loopback
// listener (dev's default, or serve on 127.0.0.1) answers only its
// loopback names, the host of --addr and the names of --allow-host
// (allow), so a web page cannot reach it by DNS rebinding; any other
// listener answers any Host.
func listenHosts(ln net.Listener, addr string, dev bool, allow []string) []string {
	host, _, _ := net.SplitHostPort(addr)
	tcp, ok := ln.Addr().(*net.TCPAddr)
	if dev || ok && tcp.IP.IsLoopback() {
		return append(httpapi.LoopbackHosts(host), allow...)
	}
	return nil
}

// addAllowHostFlag registers --allow-host on fs: a Host name a server on
// loopback answers besides its own (a tunnel's or a reverse proxy's that
// passes the caller's Host on); ".example.com" is the domain and every
// name under it.
func addAllowHostFlag(fs *pflag.FlagSet, hosts *[]string) {
	fs.Func("allow-host", "a Host name to answer besides the loopback names, when a tunnel or a proxy in front passes its own on (\".example.com\": the domain and every name under it; repeatable)", func(s string) error {
		h, err := httpapi.ParseAllowedHost(s)
		if err == nil {
			*hosts = append(*hosts, h)
		}
		return err
	})
}

// serve runs the engine and the HTTP server until ctx ends, then shuts down
// gracefully: in-flight requests finish, the engine stops, the store closes.
func serve(ctx context.Context, c serveConfig) (err error) {
	defer c.ln.Close()
	defer func() {
		if cerr := c.store.Close(); err == nil {
			err = cerr
		}
	}()
	n := node.New(node.Config{Store: c.store, Logger: c.log, Dev: c.dev, Guard: c.guard, Shared: c.shared, Ops: c.ops, Channels: c.channels, StopGrace: c.grace})
	// The services run until Close, not until the signal: during the
	// stop's grace the node still beats, notifies and rescues.
	if err := n.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	// Worker connections are hijacked, so the HTTP server's shutdown does
	// not end them: Close stops the engine first (attempts in flight are
	// given back uncounted), then tells the workers to go.
	defer n.Close()
	ln := c.ln
	b := readBuild()
	n.Engine.Metrics().SetBuild(b.version, b.commit, b.goVersion)
	// /mcp calls the API it is mounted on, in process, with each caller's key.
	var api *httpapi.Server
	mcpHTTP := mcp.NewHTTPHandler(mcp.HTTPConfig{Dev: c.dev, Logger: c.log, Version: mcpVersion(),
		API: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { api.ServeHTTP(w, r) })})
	api = n.Handler(node.HandlerConfig{Auth: c.auth(n.Engine.Store()), Hosts: listenHosts(ln, c.addr, c.dev, c.allowHosts),
		Extra: map[string]http.Handler{"/mcp": mcpHTTP}})
	to := c.timeouts
	if to == (httpTimeouts{}) {
		to = defaultTimeouts
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: to.Read, IdleTimeout: to.Idle,
		ErrorLog: slog.NewLogLogger(c.log.Handler(), slog.LevelWarn)}
	srv.RegisterOnShutdown(mcpHTTP.Close)  // MCP sessions hold streams open
	srv.RegisterOnShutdown(n.CloseStreams) // so do the console's live counts and channel subscribers
	mode := "serve"
	if c.dev {
		mode = "dev"
	}
	c.log.Info("errand listening", "mode", mode, "addr", "http://"+ln.Addr().String())
	// Where a person goes next, then the line scripts wait for (its URL
	// ends it).
	fmt.Fprintf(c.stdout, "console  http://%[1]s/console/\nMCP      http://%[1]s/mcp\nerrand %[2]s listening on http://%[1]s\n", ln.Addr(), mode)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	c.log.Info("shutting down")
	stopAt := time.Now()
	// The node and the HTTP server stop together: the server takes no
	// new request (callers go to another node) and waits for those under
	// way, its long polls and streams ended at once (CloseStreams), while
	// the node lets its deliveries finish for the grace, stores their
	// outcomes and hands back the rest, telling the other nodes.
	closed := make(chan struct{})
	go func() { n.Close(); close(closed) }()
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		// A request still open after the wait (long polls and streams
		// were ended): cut, and the stop still succeeds.
		c.log.Warn("requests still open after 15 s were cut", "err", err)
		_ = srv.Close()
	}
	<-closed
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	c.log.Info("stopped", "ms", time.Since(stopAt).Milliseconds())
	return nil
}
