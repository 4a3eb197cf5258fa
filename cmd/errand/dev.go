package main

import (
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
)

func newDevCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "dev",
		Short: "Run the emulator: embedded SQLite, no keys, instances created on first use",
		Long: `Run errand for development on one machine: the store is a SQLite file in --data,
no API key is needed, an instance is created on its first use (with its queue "default"),
and webhooks may be plain http and local. Answered writes survive kill -9. Stop it with
Ctrl-C: calls in flight finish first.`,
		Example: `  errand dev
  errand dev --addr 127.0.0.1:8080 --data /tmp/errand`,
		Args: noArgs,
	}
	fs := c.Flags()
	addr := fs.String("addr", "127.0.0.1:9191", "address to listen on")
	data := fs.String("data", "./.errand/", "directory of the SQLite store")
	sync := fs.String("sync", "NORMAL", "SQLite synchronous mode: NORMAL (survives kill -9) or FULL (survives power loss)")
	var timeouts httpTimeouts
	addTimeoutFlags(fs, &timeouts)
	opsf := addOpsFlags(fs)
	c.RunE = func(c *cobra.Command, _ []string) error {
		ctx := c.Context()
		log := slog.New(slog.NewTextHandler(c.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
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
			rules: task.URLRules{AllowHTTP: true}, stdout: c.OutOrStdout(), timeouts: timeouts, ops: ops,
		})
	}
	return c
}
