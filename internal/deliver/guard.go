package deliver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/errandhq/errand/internal/task"
)

// Resolver looks host names up; *net.Resolver is one. Tests inject a fake so
// that no test needs DNS.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DefaultLookupTimeout bounds the DNS lookup of CheckURL.
const DefaultLookupTimeout = 3 * time.Second

// Guard is serve mode's outbound address guard. It refuses loopback, private,
// link-local, shared (CGNAT), multicast, broadcast, reserved and documentation
// ranges and the cloud metadata endpoints, including IPv6 forms that wrap such
// an IPv4 address (IPv4-mapped, NAT64, 6to4, Teredo), unless the address lies
// inside one of the operator's allow prefixes (--webhook-allow CIDR). A
// metadata address passes only an allow prefix that is that single address.
//
// Plain http is accepted only towards allowed addresses: a URL may be http
// when its host is a literal IP inside an allow prefix or every address it
// resolves to is; anything else must be https. The same rule is enforced
// again at dial time by ControlContext.
//
// CheckURL runs when a URL is saved; Control (or ControlContext) runs in the
// dialer on the address actually connected to, so a name that resolves to a
// public address at save time and to a private one later (DNS rebinding) is
// still refused. A Guard is safe for concurrent use.
type Guard struct {
	allow    []netip.Prefix
	resolver Resolver
	timeout  time.Duration
}

// GuardOption configures a Guard.
type GuardOption func(*Guard)

// WithResolver makes CheckURL resolve names with r instead of
// net.DefaultResolver.
func WithResolver(r Resolver) GuardOption { return func(g *Guard) { g.resolver = r } }

// WithLookupTimeout bounds CheckURL's DNS lookup (DefaultLookupTimeout; a
// value of 0 or less keeps the default).
func WithLookupTimeout(d time.Duration) GuardOption {
	return func(g *Guard) {
		if d > 0 {
			g.timeout = d
		}
	}
}

// NewGuard returns a guard that lets through the addresses inside allow and
// refuses the special-purpose ranges. IPv4 prefixes written in IPv4-mapped
// form (::ffff:10.0.0.0/104) are taken as the IPv4 prefix.
func NewGuard(allow []netip.Prefix, opts ...GuardOption) *Guard {
	g := &Guard{resolver: net.DefaultResolver, timeout: DefaultLookupTimeout}
	for _, p := range allow {
		if !p.IsValid() {
			continue
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		g.allow = append(g.allow, p.Masked())
	}
	for _, o := range opts {
		o(g)
	}
	return g
}

// URLRules returns the webhook URL rules of serve mode: the guard decides
// both the scheme (http only towards allowed addresses) and the address, so
// AllowHTTP is set and CheckURL does the refusing.
func (g *Guard) URLRules() task.URLRules {
	return task.URLRules{AllowHTTP: true, Check: g.CheckURL}
}

// RefusedError says why the guard refused an address.
type RefusedError struct {
	// Host is the host as written in the URL; "" at dial time.
	Host string
	// Addr is the refused address.
	Addr netip.Addr
	// Reason reads after the address: "is a loopback address".
	Reason string
}

// Error implements error.
func (e *RefusedError) Error() string {
	if e.Host != "" && e.Host != e.Addr.String() {
		return fmt.Sprintf("%s resolves to %s, which %s", e.Host, e.Addr, e.Reason)
	}
	return fmt.Sprintf("%s %s", e.Addr, e.Reason)
}

// ErrPlainHTTP is the refusal of http:// towards an address outside the
// allow list.
var ErrPlainHTTP = errors.New("must use https (http is allowed only to ranges listed with --webhook-allow)")

const allowHint = "; list its range with --webhook-allow to permit it"

// CheckAddr reports whether a webhook may connect to ip: nil, or a
// *RefusedError.
func (g *Guard) CheckAddr(ip netip.Addr) error {
	ip = ip.WithZone("")
	if !ip.IsValid() {
		return &RefusedError{Addr: ip, Reason: "is not an IP address"}
	}
	if m, ok := metadataOf(ip); ok {
		if g.allowsExactly(ip) || g.allowsExactly(m) {
			return nil
		}
		return &RefusedError{Addr: ip, Reason: "is a cloud metadata address; only an allow prefix of that single address permits it"}
	}
	if g.allowedDirect(ip) {
		return nil
	}
	if v4, form, ok := embeddedV4(ip); ok {
		if err := g.CheckAddr(v4); err != nil {
			var re *RefusedError
			errors.As(err, &re)
			return &RefusedError{Addr: ip, Reason: fmt.Sprintf("wraps %s (%s), which %s", v4, form, re.Reason)}
		}
		if form == "Teredo" {
			if srv := teredoServer(ip); g.CheckAddr(srv) != nil {
				return &RefusedError{Addr: ip, Reason: fmt.Sprintf("names the Teredo server %s, a special-purpose address", srv)}
			}
		}
		return nil
	}
	if what := classify(ip); what != "" {
		return &RefusedError{Addr: ip, Reason: "is " + what + " address" + allowHint}
	}
	return nil
}

// allowed reports whether ip, or the IPv4 address it wraps, lies inside an
// allow prefix.
func (g *Guard) allowed(ip netip.Addr) bool {
	ip = ip.WithZone("")
	if g.allowedDirect(ip) {
		return true
	}
	if v4, _, ok := embeddedV4(ip); ok {
		return g.allowedDirect(v4)
	}
	return false
}

func (g *Guard) allowedDirect(ip netip.Addr) bool {
	for _, p := range g.allow {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// metadataOf returns the metadata address that ip is or wraps.
func metadataOf(ip netip.Addr) (netip.Addr, bool) {
	if isMetadata(ip) {
		return ip, true
	}
	if v4, _, ok := embeddedV4(ip); ok && isMetadata(v4) {
		return v4, true
	}
	return netip.Addr{}, false
}

func (g *Guard) allowsExactly(ip netip.Addr) bool {
	for _, p := range g.allow {
		if p.IsSingleIP() && p.Addr() == ip {
			return true
		}
	}
	return false
}

// CheckURL vets a webhook URL when it is saved; it fits task.URLRules.Check
// (see URLRules). The scheme must be https, or http towards allowed
// addresses only. A literal IP is checked as it is; localhost and
// *.localhost are refused without a lookup; a host that a browser or a C
// resolver would read as a legacy IPv4 form (2130706433, 0x7f.1, 127.1) is
// refused; any other name is resolved (bounded by the lookup timeout) and
// every address it resolves to must pass. A name that does not resolve is
// refused.
func (g *Guard) CheckURL(u *url.URL) error {
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	return g.CheckURLContext(ctx, u)
}

// CheckURLContext is CheckURL with the caller's context for the lookup.
func (g *Guard) CheckURLContext(ctx context.Context, u *url.URL) error {
	plain := false
	switch u.Scheme {
	case "https":
	case "http":
		plain = true
	default:
		return errors.New("must use https")
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "" {
		return errors.New("has no host")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if err := g.CheckAddr(ip); err != nil {
			return err
		}
		if plain && !g.allowed(ip) {
			return ErrPlainHTTP
		}
		return nil
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return fmt.Errorf("%s names this host and is refused; for a local receiver, list 127.0.0.0/8 with --webhook-allow and use the address", host)
	}
	if numericHost(host) {
		if ip, ok := parseLegacyIPv4(host); ok {
			if err := g.CheckAddr(ip); err != nil {
				return fmt.Errorf("%s is %s written in a legacy form: %w", host, ip, err)
			}
			return fmt.Errorf("%s is %s written in a legacy form; write it as four decimal numbers", host, ip)
		}
		return fmt.Errorf("%s is not a valid IPv4 address", host)
	}
	addrs, err := g.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("%s does not resolve: %s", host, shortDNSError(err))
	}
	if len(addrs) == 0 {
		return fmt.Errorf("%s resolves to no address", host)
	}
	for _, ip := range addrs {
		if err := g.CheckAddr(ip); err != nil {
			var re *RefusedError
			if errors.As(err, &re) {
				re.Host = host
			}
			return err
		}
		if plain && !g.allowed(ip) {
			return ErrPlainHTTP
		}
	}
	return nil
}

// Control checks the address a dialer is about to connect to; it has the
// signature of net.Dialer.Control. The address is always an IP and port
// there, so the check covers whatever DNS answered at dial time.
func (g *Guard) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refused: cannot read dial address %q", address)
	}
	return g.CheckAddr(ap.Addr())
}

// plainHTTPKey marks the context of a dial made for an http:// request.
type plainHTTPKey struct{}

// withPlainHTTP marks ctx as carrying an http:// request, so that
// ControlContext applies the http-only-to-allowed-ranges rule.
func withPlainHTTP(ctx context.Context) context.Context {
	return context.WithValue(ctx, plainHTTPKey{}, true)
}

// ControlContext is Control for net.Dialer.ControlContext. When the dial is
// for an http:// request (the Webhook deliverer marks its context), the
// address must also lie inside an allow prefix.
func (g *Guard) ControlContext(ctx context.Context, network, address string, c syscall.RawConn) error {
	if err := g.Control(network, address, c); err != nil {
		return err
	}
	if plain, _ := ctx.Value(plainHTTPKey{}).(bool); plain {
		ap, _ := netip.ParseAddrPort(address)
		if !g.allowed(ap.Addr()) {
			return ErrPlainHTTP
		}
	}
	return nil
}
