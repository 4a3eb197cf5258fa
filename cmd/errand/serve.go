package main

import (
	"cmp"
	"context"
	"fmt"
	"github.com/errandhq/errand/internal/engine"
	"net/netip"
	"os"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/storeurl"
)

// defaultStore is the store of `errand serve` and `errand keys` when
// --store is not given.
const defaultStore = "sqlite://errand.db"

func newServeCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run production mode: API keys required, SQLite or PostgreSQL, outbound webhook guard",
		Long: `Run errand in production. Every call needs an API key (make them with errand keys
create), but the probes GET /livez (liveness) and GET /healthz (readiness: the store
answers), GET /metrics, the OpenAPI document and hook URLs; instances are created
explicitly; webhooks must be https and may not reach private, loopback or link-local
addresses unless --webhook-allow opens a range.
--store picks the backend: sqlite://PATH for one node, postgres://… for any number of nodes
sharing the work. On a store without any key, serve makes a first admin key (grant full:*)
and shows it once.`,
		Example: `  errand serve --store sqlite:///var/lib/errand/errand.db
  errand serve --addr :9191 --store 'postgres://errand@db.internal/errand' --webhook-allow 10.20.0.0/16`,
		Args: noArgs,
	}
	fs := c.Flags()
	addr := fs.String("addr", ":9191", "address to listen on")
	storeURL := fs.String("store", defaultStore, "the store: sqlite://PATH (one node) or postgres://USER@HOST/DB (any number of nodes)")
	syncMode := fs.String("sync", "NORMAL", "SQLite synchronous mode: NORMAL (survives kill -9) or FULL (survives power loss)")
	org := fs.String("org", "default", "organization of the first admin key, made when the store has no key at all")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the server to `FILE` until it stops (for measuring)")
	var allow []netip.Prefix
	fs.Func("webhook-allow", "a CIDR (or one IP) webhooks may reach although it is private, loopback or link-local; http is allowed there (repeatable)", func(s string) error {
		p, err := parseAllow(s)
		if err == nil {
			allow = append(allow, p)
		}
		return err
	})
	var timeouts httpTimeouts
	addTimeoutFlags(fs, &timeouts)
	var hosts []string
	addAllowHostFlag(fs, &hosts)
	var channels engine.ChannelsConfig
	addChannelFlags(fs, &channels)
	var grace time.Duration
	addGraceFlag(fs, &grace)
	opsf := addOpsFlags(fs, false)
	keyFile := fs.String("first-key-file", "", "where the first admin key is written when stderr is not a terminal (default: errand-admin-key beside the SQLite file, or in the working directory)")
	lf := addLogFlags(fs)
	hide(fs, "cpuprofile")
	c.RunE = func(c *cobra.Command, _ []string) error {
		ctx := c.Context()
		if err := auth.ValidateOrg(*org); err != nil {
			return usageErrorf("--org: %w", err)
		}
		if err := checkNodeFlags(*syncMode, timeouts, channels, grace, opsf, false); err != nil {
			return err
		}
		log, ln, err := lf.listen(c, *addr)
		if err != nil {
			return err
		}
		defer ln.Close()
		ops, err := opsf.config("") // after the port: --backup-dir is made here
		if err != nil {
			return err
		}
		if *cpuProfile != "" {
			stop, err := startCPUProfile(*cpuProfile)
			if err != nil {
				return err
			}
			defer stop()
		}
		release, err := lockServeStore(*storeURL)
		if err != nil {
			return err
		}
		defer release() // after serve has closed the store
		st, err := openStore(ctx, *storeURL, storeOptions{Sync: *syncMode, Log: log})
		if err != nil {
			return err
		}
		fk := firstKey{org: *org, log: log, stderr: c.ErrOrStderr(), file: cmp.Or(*keyFile, defaultKeyFile(*storeURL))}
		if err := fk.make(ctx, st); err != nil {
			st.Close()
			return err
		}
		g := deliver.NewGuard(allow)
		if len(allow) > 0 {
			log.Info("webhooks may reach these ranges (http allowed there)", "webhook-allow", fmt.Sprint(allow))
		}
		return serve(ctx, serveConfig{
			ln: ln, addr: *addr, allowHosts: hosts, store: st, log: log, auth: keysAuth, shared: storeurl.Shared(*storeURL),
			guard: g, stdout: c.OutOrStdout(), timeouts: timeouts, ops: ops, channels: channels, grace: grace,
		})
	}
	return c
}

// startCPUProfile profiles the process into path until the returned
// function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// keysAuth authenticates serve's calls by API key, through the engine's
// store (on PostgreSQL it caches keys for a second; see auth.Keys).
func keysAuth(st store.KeyStore) auth.Authenticator { return auth.Keys{Store: st} }

// parseAllow parses a --webhook-allow value: a CIDR, or one IP address
// (its /32 or /128).
func parseAllow(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return netip.Prefix{}, fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8 or an IP address", s)
}

// lockServeStore takes serve's store for its node (see lockSQLite): a
// SQLite file is held; a PostgreSQL store is shared by any number of nodes
// and is not locked.
func lockServeStore(rawURL string) (func(), error) {
	return lockSQLite(rawURL, "errand serve", "stop that one, or give this serve another --store (nodes that share the work share a PostgreSQL store)")
}

// storeOptions are the settings a store URL does not carry.
type storeOptions = storeurl.Options

// openStore opens the store a URL names (see storeurl.Open).
func openStore(ctx context.Context, rawURL string, o storeOptions) (store.Store, error) {
	return storeurl.Open(ctx, rawURL, o)
}
