package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strings"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// hostGuard refuses a request whose Host header is not one of the names
// the server is reached by. A server on loopback is meant for this machine
// alone; a web page can still reach it by DNS rebinding (a name of the
// attacker's that resolves to 127.0.0.1), and such a request carries the
// attacker's name in Host. hosts nil accepts any Host.
type hostGuard struct {
	hosts map[string]bool
}

func newHostGuard(hosts []string) *hostGuard {
	if hosts == nil {
		return nil
	}
	g := &hostGuard{hosts: map[string]bool{}}
	for _, h := range hosts {
		g.hosts[strings.ToLower(strings.Trim(h, "[]"))] = true
	}
	return g
}

// allowed reports whether r's Host (without its port) is one of g's
// names, or under one of its ".domain" names.
func (g *hostGuard) allowed(r *http.Request) bool {
	if g == nil {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if g.hosts[host] {
		return true
	}
	for name := range g.hosts {
		if strings.HasPrefix(name, ".") && (host == name[1:] || strings.HasSuffix(host, name)) {
			return true
		}
	}
	return false
}

// ParseAllowedHost reads a host name a server on loopback is to answer
// (errand's --allow-host): a DNS name or an IP address, without a scheme,
// port or path; ".example.com" stands for the domain and every name
// under it. It returns the name in lower case.
func ParseAllowedHost(s string) (string, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	bare := strings.TrimPrefix(name, ".")
	if _, err := netip.ParseAddr(strings.Trim(bare, "[]")); err == nil && !strings.HasPrefix(name, ".") {
		return strings.Trim(bare, "[]"), nil
	}
	if bare == "" || len(bare) > 253 || strings.Contains(bare, "..") || strings.HasSuffix(bare, ".") {
		return "", fmt.Errorf("%q is not a host name: give a name such as hooks.example.com, or .example.com for a domain and every name under it", s)
	}
	for _, r := range bare {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
			return "", fmt.Errorf("%q is not a host name (no scheme, port, path or %q): give a name such as hooks.example.com, or .example.com for a domain and every name under it", s, string(r))
		}
	}
	return name, nil
}

// LoopbackHosts are the Host names of a server listening on loopback:
// localhost, 127.0.0.1 and ::1, plus listenHost (the host of --addr) when
// it is none of these.
func LoopbackHosts(listenHost string) []string {
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if listenHost != "" {
		hosts = append(hosts, listenHost)
	}
	return hosts
}

// guard is the outermost layer of the server: the Host check, then the
// refusal of cross-site state-changing requests (net/http's
// CrossOriginProtection: a POST, PATCH or DELETE whose Sec-Fetch-Site is
// not same-origin or none, or, from a browser that does not send it, whose
// Origin is not the Host). Clients that are not browsers send neither
// header and pass.
func (s *Server) guard(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, task.Errorf(task.CodePermissionDenied, "a cross-site %s is refused: errand answers state-changing calls from its own origin or from clients that are not browsers", r.Method))
	}))
	protected := cop.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !canonicalPath(r.URL.Path) {
			// The mux would answer a redirect to the cleaned path (an HTML
			// 307, which a client following it would POST again).
			s.writerFor(r)(w, r, task.Errorf(task.CodeNotFound, "no route %s %s: a path has no empty, '.' or '..' segments", r.Method, r.URL.Path))
			return
		}
		if strings.HasPrefix(r.URL.Path, hookPrefix) {
			// A hook's URL holds its capability, a random token, and its
			// answer tells nothing else: any Host may call it (a tunnel's,
			// a proxy's), and so may a page of another site.
			hookCORS(w, r, next)
			return
		}
		if !s.hosts.allowed(r) {
			s.writeError(w, r, task.Errorf(task.CodePermissionDenied, "host %s is not served here: this server answers to its loopback names, its --addr and the names of --allow-host", task.Quote(r.Host)))
			return
		}
		// A cross-site GET passes (a page's subscription with a token), but
		// makes no instance in dev: only calls of its own site or of clients
		// that are not browsers create one on first use.
		if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
			r = r.WithContext(engine.WithoutCreate(r.Context()))
		}
		protected.ServeHTTP(w, r)
	})
}

// canonicalPath reports whether p is as path.Clean leaves it (a trailing
// slash kept): no empty, "." or ".." segment.
func canonicalPath(p string) bool {
	if p == "" {
		return true
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}

// foreignOrigin reports whether r carries an Origin naming another host
// than the one it was sent to: the rule websocket.Accept applies, checked
// first so that the refusal is errand's (PERMISSION_DENIED, JSON) rather
// than the WebSocket library's plain text.
func foreignOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return false
	}
	u, err := url.Parse(o)
	return err != nil || !strings.EqualFold(u.Host, r.Host)
}

// hookCORS serves a hook call to any origin: a page of another site may
// POST to a hook with fetch and read the answer (the task's id), as an
// HTML form of it may post. A preflight (OPTIONS with
// Access-Control-Request-Method) is answered 204 allowing POST and the
// headers asked for, cached a day; no credentials are involved (a hook
// takes no key or cookie). Other calls go on to next.
func hookCORS(w http.ResponseWriter, r *http.Request, next http.Handler) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", http.MethodPost)
		if asked := r.Header.Get("Access-Control-Request-Headers"); asked != "" {
			h.Set("Access-Control-Allow-Headers", asked)
		}
		h.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	next.ServeHTTP(w, r)
}
