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

	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/httpapi"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

type serveConfig struct {
	addr  string
	store store.Store
	log   *slog.Logger
	dev   bool
	auth  auth.Authenticator
	rules task.URLRules
	guard *deliver.Guard // nil in dev: any address
	// shared: other nodes write to the same store, so sleeping services
	// look at it at least every second.
	shared bool
	stdout io.Writer
}

// serve runs the engine and the HTTP server until ctx ends, then shuts down
// gracefully: in-flight requests finish, the engine stops, the store closes.
func serve(ctx context.Context, c serveConfig) (err error) {
	defer func() {
		if cerr := c.store.Close(); err == nil {
			err = cerr
		}
	}()
	wh := deliver.NewWebhook(deliver.WebhookOptions{Guard: c.guard})
	defer wh.Close()
	backstop := time.Duration(0) // the engine's default: a lone node wakes itself
	if c.shared {
		backstop = time.Second
	}
	eng := engine.New(engine.Config{
		Store: c.store, Logger: c.log, Dev: c.dev, URLRules: c.rules, Backstop: backstop, DatabaseClock: c.shared,
		Deliverer: &deliver.Mux{Webhook: wh},
	})
	if err := eng.Start(ctx); err != nil {
		return err
	}
	defer eng.Stop()
	api := httpapi.New(httpapi.Config{Engine: eng, Auth: c.auth, Logger: c.log,
		Extra: map[string]http.Handler{"GET /metrics": eng.Metrics().Handler()}})
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(c.log.Handler(), slog.LevelWarn)}
	mode := "serve"
	if c.dev {
		mode = "dev"
	}
	c.log.Info("errand listening", "mode", mode, "addr", "http://"+ln.Addr().String())
	fmt.Fprintf(c.stdout, "errand %s listening on http://%s\n", mode, ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	c.log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
