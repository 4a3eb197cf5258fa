package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
)

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9191", "address to listen on")
	data := fs.String("data", "./.errand/", "directory of the SQLite store")
	sync := fs.String("sync", "NORMAL", "SQLite synchronous mode: NORMAL (survives kill -9) or FULL (survives power loss)")
	var timeouts httpTimeouts
	addTimeoutFlags(fs, &timeouts)
	opsf := addOpsFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := os.MkdirAll(*data, 0o755); err != nil {
		return err
	}
	ops, err := opsf.config(*data)
	if err != nil {
		return err
	}
	st, err := sqlite.Open(ctx, filepath.Join(*data, "errand.db"), sqlite.Options{Synchronous: *sync, Logger: log})
	if err != nil {
		return err
	}
	return serve(ctx, serveConfig{
		addr: *addr, store: st, log: log, dev: true, auth: auth.Dev{},
		rules: task.URLRules{AllowHTTP: true}, stdout: stdout, timeouts: timeouts, ops: ops,
	})
}
