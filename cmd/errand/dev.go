package main

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/storeurl"
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
	var hosts []string
	addAllowHostFlag(fs, &hosts)
	var channels engine.ChannelsConfig
	addChannelFlags(fs, &channels)
	var grace time.Duration
	addGraceFlag(fs, &grace)
	opsf := addOpsFlags(fs, true)
	lf := addLogFlags(fs)
	c.RunE = func(c *cobra.Command, _ []string) error {
		ctx := c.Context()
		if err := checkNodeFlags(*sync, timeouts, channels, grace, opsf, true); err != nil {
			return err
		}
		log, ln, err := lf.listen(c, *addr)
		if err != nil {
			return err
		}
		warnIfReachable(log, ln)
		st, release, err := openDev(ctx, *data, *sync, log)
		if err != nil {
			ln.Close()
			return err
		}
		defer release()
		ops, err := opsf.config(*data) // after the lock: it may make DATA/backup.key
		if err != nil {
			st.Close()
			ln.Close()
			return err
		}
		return serve(ctx, serveConfig{
			ln: ln, addr: *addr, allowHosts: hosts, store: st, log: log, dev: true, auth: func(store.KeyStore) auth.Authenticator { return auth.Dev{} },
			stdout: c.OutOrStdout(), timeouts: timeouts, ops: ops, channels: channels, grace: grace,
		})
	}
	return c
}

// warnIfReachable warns when dev listens on an address other machines may
// reach (0.0.0.0 in a container, say): dev has no keys, so whoever reaches
// it may do anything. It is a warning, not a refusal: a container's port
// published to its host's loopback is a fair use.
func warnIfReachable(log *slog.Logger, ln net.Listener) {
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		log.Warn("errand dev listens on a non-loopback address and needs no API key: anyone who reaches " +
			ln.Addr().String() + " may read and change everything; run errand serve, with keys, to serve a network")
	}
}

// openDev takes the data directory (see lockDataDir) and its store's file
// (see lockSQLite), and opens the store.
func openDev(ctx context.Context, data, sync string, log *slog.Logger) (store.Store, func(), error) {
	// The directory and the store's files are their owner's only (they
	// hold webhook signing keys and the backup key); the store opens
	// through storeurl, as serve's.
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, nil, err
	}
	releaseDir, err := lockDataDir(data)
	if err != nil {
		return nil, nil, err
	}
	// The store's own lock too, the one errand serve takes: a serve on
	// DATA/errand.db and this dev are one store's two nodes.
	path := filepath.Join(data, "errand.db")
	releaseStore, err := lockSQLite("sqlite://"+path, "errand dev", "stop it, or give this errand dev another --data")
	if err != nil {
		releaseDir()
		return nil, nil, err
	}
	release := func() { releaseStore(); releaseDir() }
	st, err := storeurl.Open(ctx, "sqlite://"+path, storeurl.Options{Sync: sync, Log: log})
	if err != nil {
		release()
		return nil, nil, err
	}
	return st, release, nil
}
