package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/inproc"
)

// HTTPConfig configures the streamable HTTP transport a node serves at /mcp.
type HTTPConfig struct {
	// API is the node's v1 API handler. Every tool call is a request to it,
	// in process, carrying the MCP request's own Bearer key.
	API http.Handler
	// Dev is errand dev: no key needed and every tool listed.
	Dev bool
	// SessionTimeout closes a session idle this long (default 30 min).
	SessionTimeout time.Duration
	Version        string
	Logger         *slog.Logger
}

// HTTPHandler serves MCP over streamable HTTP. In serve mode every request
// needs `Authorization: Bearer <key>`: the key is checked against the API
// (GET /v1/keys/self) on each request, a session lists the tools its key's
// grants allow, and a session's later requests must carry the same key.
type HTTPHandler struct {
	h       http.Handler
	servers map[errandapi.Role]*mcp.Server // by the key's strongest role; "" for dev
}

// keyInfo is what the token check leaves for the session: the key and
// what it may do.
type keyInfo struct {
	key  string
	self *errandapi.KeySelf
}

const keyInfoExtra = "errand.key"

// NewHTTPHandler returns the /mcp handler of a node.
func NewHTTPHandler(cfg HTTPConfig) *HTTPHandler {
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = 30 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	newClient := func(key string) (*client.Client, error) {
		// The host is never dialled: inproc.Transport serves every request. It is a
		// loopback name, which the node's Host guard always accepts.
		return client.New("http://localhost", ClientOptions(key, &http.Client{Transport: inproc.Transport{H: cfg.API}}))
	}
	clientFor := func(_ context.Context, extra *mcp.RequestExtra) (*client.Client, error) {
		if extra == nil || extra.TokenInfo == nil {
			return newClient("") // dev: no key
		}
		ki, _ := extra.TokenInfo.Extra[keyInfoExtra].(*keyInfo)
		if ki == nil {
			return nil, errors.New("the session carries no verified key")
		}
		return newClient(ki.key)
	}
	h := &HTTPHandler{servers: map[errandapi.Role]*mcp.Server{}}
	if cfg.Dev {
		h.servers[""] = NewServer(Options{Client: clientFor, Version: cfg.Version, Logger: cfg.Logger})
	} else {
		for _, r := range []errandapi.Role{errandapi.RoleRead, errandapi.RoleWrite, errandapi.RoleFull} {
			self := &errandapi.KeySelf{Grants: []errandapi.Grant{{Instance: "*", Role: r}}}
			h.servers[r] = NewServer(Options{Self: self, Client: clientFor, Version: cfg.Version, Logger: cfg.Logger})
		}
	}
	stream := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		if cfg.Dev {
			return h.servers[""]
		}
		ti := auth.TokenInfoFromContext(r.Context())
		if ti == nil {
			return nil
		}
		ki, _ := ti.Extra[keyInfoExtra].(*keyInfo)
		if ki == nil {
			return nil
		}
		return h.servers[ki.self.Strongest()]
	}, &mcp.StreamableHTTPOptions{
		SessionTimeout: cfg.SessionTimeout, Logger: sdkLogger(cfg.Logger),
		// In dev (no key) a web page on another site must not reach the
		// emulator through DNS rebinding; in serve mode the key is the
		// guard, and nodes behind a reverse proxy see other Host names.
		DisableLocalhostProtection: !cfg.Dev,
	})
	h.h = stream
	if !cfg.Dev {
		verify := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
			c, err := newClient(token)
			if err != nil { // a token client.New refuses is no key errand made
				return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
			}
			self, err := c.Self(ctx)
			if errors.Is(err, client.ErrUnauthenticated) {
				return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
			}
			if err != nil {
				return nil, err
			}
			if self.Strongest() == "" {
				return nil, fmt.Errorf("%w: the key has no grant", auth.ErrInvalidToken)
			}
			sum := sha256.Sum256([]byte(token))
			// UserID binds a session to its key: the SDK refuses a later
			// request of the session that carries another key.
			return &auth.TokenInfo{UserID: hex.EncodeToString(sum[:]),
				Extra: map[string]any{keyInfoExtra: &keyInfo{key: token, self: self}}}, nil
		}
		h.h = withChallenge(auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true}), stream)
	}
	return h
}

// withChallenge serves next behind bearer, and a 401 bearer answers
// carries errand's WWW-Authenticate challenge, as the v1 API's do (the
// SDK's middleware sends one only with a resource metadata URL or scopes,
// which errand's keys have none of). Only bearer's refusals go through the
// challenging writer; a request it lets through is served on w itself.
func withChallenge(bearer func(http.Handler) http.Handler, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		through := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { next.ServeHTTP(w, r) })
		bearer(through).ServeHTTP(challenger{w}, r)
	})
}

// challenger adds the bearer challenge to a 401.
type challenger struct{ http.ResponseWriter }

// WriteHeader adds WWW-Authenticate to a 401 before it is written.
func (c challenger) WriteHeader(code int) {
	if code == http.StatusUnauthorized {
		c.Header().Set("WWW-Authenticate", errandapi.BearerChallenge)
	}
	c.ResponseWriter.WriteHeader(code)
}

// ServeHTTP serves one MCP request.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.h.ServeHTTP(w, r) }

// Close ends every open session, so that their long-lived streams let the
// HTTP server shut down.
func (h *HTTPHandler) Close() {
	for _, s := range h.servers {
		for ss := range s.Sessions() {
			_ = ss.Close()
		}
	}
}
