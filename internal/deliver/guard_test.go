package deliver

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/task"
)

// fakeResolver answers from a table; a name not in it is not found. No test
// touches real DNS.
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if host == "slow.example" {
		<-ctx.Done()
		return nil, &net.DNSError{Err: "i/o timeout", Name: host, IsTimeout: true}
	}
	list, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]netip.Addr, len(list))
	for i, s := range list {
		out[i] = netip.MustParseAddr(s)
	}
	return out, nil
}

var testDNS = fakeResolver{
	"example.com":              {"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"},
	"mapped-public.example":    {"::ffff:93.184.216.34"},
	"metadata.google.internal": {"169.254.169.254"},
	"rebind.example":           {"93.184.216.34", "10.0.0.1"},
	"v6private.example":        {"fd12::1"},
	"mapped.example":           {"::ffff:10.1.2.3"},
	"loopback.example":         {"127.0.0.1"},
	"nat64.example":            {"64:ff9b::7f00:1"},
	"empty.example":            {},
	"internal.example":         {"10.0.0.7"},
	"mixed.example":            {"10.0.0.7", "93.184.216.34"},
}

func prefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

func checkURL(t *testing.T, g *Guard, raw string) error {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("url.Parse(%q): %v", raw, err)
	}
	return g.CheckURL(u)
}

func TestGuardRefuses(t *testing.T) {
	t.Parallel()
	g := NewGuard(nil, WithResolver(testDNS))
	// Each URL, and the words its refusal must contain.
	cases := []struct{ url, want string }{
		{"https://127.0.0.1/", "loopback"},
		{"https://127.255.255.254:8443/x", "loopback"},
		{"https://[::1]/", "loopback"},
		{"https://[::]/", "unspecified"},
		{"https://0.0.0.0/", "this-network"},
		{"https://0.1.2.3/", "this-network"},
		{"https://10.0.0.1/", "private"},
		{"https://172.16.5.4/", "private"},
		{"https://172.31.255.255/", "private"},
		{"https://192.168.1.1/", "private"},
		{"https://169.254.169.254/latest/meta-data/", "metadata"},
		{"https://169.254.1.1/", "link-local"},
		{"https://169.254.170.2/v2/credentials", "metadata"},
		{"https://100.64.0.1/", "CGNAT"},
		{"https://100.127.255.254/", "CGNAT"},
		{"https://100.100.100.200/", "metadata"},
		{"https://168.63.129.16/", "metadata"},
		{"https://192.0.0.192/", "metadata"},
		{"https://192.0.0.8/", "IETF"},
		{"https://224.0.0.1/", "multicast"},
		{"https://239.255.255.250/", "multicast"},
		{"https://255.255.255.255/", "broadcast"},
		{"https://240.0.0.1/", "reserved"},
		{"https://192.0.2.10/", "documentation"},
		{"https://198.51.100.1/", "documentation"},
		{"https://203.0.113.5/", "documentation"},
		{"https://198.18.0.1/", "benchmarking"},
		{"https://192.88.99.1/", "6to4 relay"},
		{"https://[fe80::1]/", "link-local"},
		{"https://[fe80::1%25eth0]/", "link-local"},
		{"https://[fc00::1]/", "private"},
		{"https://[fd12:3456::1]/", "private"},
		{"https://[fd00:ec2::254]/", "metadata"},
		{"https://[fec0::1]/", "site-local"},
		{"https://[ff02::1]/", "multicast"},
		{"https://[100::1]/", "discard"},
		{"https://[2001:db8::1]/", "documentation"},
		{"https://[2001:10::1]/", "IETF"},
		{"https://[::127.0.0.1]/", "reserved"},
		{"https://[::ffff:127.0.0.1]/", "wraps 127.0.0.1 (IPv4-mapped)"},
		{"https://[::ffff:7f00:1]/", "wraps 127.0.0.1 (IPv4-mapped)"},
		{"https://[::ffff:10.0.0.1]/", "private"},
		{"https://[::ffff:169.254.169.254]/", "metadata"},
		{"https://[64:ff9b::a00:1]/", "wraps 10.0.0.1 (NAT64)"},
		{"https://[64:ff9b::7f00:1]/", "wraps 127.0.0.1 (NAT64)"},
		{"https://[64:ff9b::a9fe:a9fe]/", "metadata"},
		{"https://[64:ff9b:1::5db8:d822]/", "local-use NAT64"},
		{"https://[2002:a00:1::]/", "wraps 10.0.0.1 (6to4)"},
		{"https://[2002:7f00:1::1]/", "wraps 127.0.0.1 (6to4)"},
		// Teredo: server 65.54.227.120, client 127.0.0.1 stored inverted.
		{"https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "wraps 127.0.0.1 (Teredo)"},
		// Teredo with a public client but a private server.
		{"https://[2001:0:a00:1:8000:63bf:a247:27dd]/", "Teredo server 10.0.0.1"},
		// Legacy IPv4 forms, never sent to DNS.
		{"http://2130706433/", "127.0.0.1 written in a legacy form"},
		{"https://2130706433/", "loopback"},
		{"http://0x7f.1/", "127.0.0.1 written in a legacy form"},
		{"https://0x7f000001/", "loopback"},
		{"https://0177.0.0.1/", "loopback"},
		{"https://127.1/", "loopback"},
		{"https://017700000001/", "loopback"},
		{"https://0xA9.0xFE.0xA9.0xFE/", "metadata"},
		{"https://1572395042/", "write it as four decimal numbers"}, // 93.184.216.34, public but ambiguous
		{"https://999.1.1.1/", "not a valid IPv4"},
		{"https://1.2.3.4.5/", "not a valid IPv4"},
		// Names.
		{"https://localhost/", "names this host"},
		{"https://LOCALHOST./", "names this host"},
		{"https://api.localhost:8080/", "names this host"},
		{"https://metadata.google.internal/computeMetadata/v1/", "metadata"},
		{"https://loopback.example/", "loopback.example resolves to 127.0.0.1"},
		{"https://rebind.example/", "10.0.0.1"},
		{"https://v6private.example/", "private"},
		{"https://mapped.example/", "private"},
		{"https://nat64.example/", "127.0.0.1"},
		{"https://nxdomain.example/", "does not resolve: no such host"},
		{"https://empty.example/", "resolves to no address"},
		// Schemes.
		{"http://93.184.216.34/", "must use https"},
		{"http://example.com/", "must use https"},
		{"ftp://93.184.216.34/", "must use https"},
	}
	if len(cases) < 30 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		err := checkURL(t, g, c.url)
		if err == nil {
			t.Errorf("%s: accepted, want refused (%s)", c.url, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %q does not say %q", c.url, err, c.want)
		}
	}
}

func TestGuardAccepts(t *testing.T) {
	t.Parallel()
	g := NewGuard(nil, WithResolver(testDNS))
	for _, raw := range []string{
		"https://93.184.216.34/",
		"https://1.1.1.1:8443/path?q=1",
		"https://example.com/hook",
		"https://EXAMPLE.COM./hook",
		"https://mapped-public.example/",
		"https://[2606:2800:220:1:248:1893:25c8:1946]/",
		"https://[::ffff:93.184.216.34]/",
		"https://[64:ff9b::5db8:d822]/",          // NAT64 of 93.184.216.34
		"https://[2002:5db8:d822::1]/",           // 6to4 of 93.184.216.34
		"https://[2001:0:4136:e378::a247:27dd]/", // Teredo, client 93.184.216.34
		"https://8.8.8.8/",
	} {
		if err := checkURL(t, g, raw); err != nil {
			t.Errorf("%s: refused: %v", raw, err)
		}
	}
}

func TestGuardAllowList(t *testing.T) {
	t.Parallel()
	g := NewGuard(prefixes("10.0.0.0/8", "127.0.0.0/8", "::ffff:172.16.0.0/108", "100.64.0.0/10", "169.254.0.0/16"),
		WithResolver(testDNS))
	for _, raw := range []string{
		"http://10.1.2.3/",
		"https://10.1.2.3/",
		"http://127.0.0.1:9191/hook",
		"http://internal.example/",   // resolves into an allowed range: http too
		"https://mixed.example/",     // every address passes
		"https://[2002:a00:1::]/",    // 6to4 of an allowed address
		"https://[::ffff:10.9.9.9]/", // mapped
		"https://172.16.0.9/",        // allowed through a mapped prefix
		"https://100.101.1.1/",       // a Tailscale-style address
		"https://169.254.1.1/",
	} {
		if err := checkURL(t, g, raw); err != nil {
			t.Errorf("%s: refused: %v", raw, err)
		}
	}
	for raw, want := range map[string]string{
		"http://mixed.example/":        "must use https", // 93.184.216.34 is outside the allow list
		"https://192.168.0.1/":         "private",
		"https://100.100.100.200/":     "metadata", // inside 100.64/10, but metadata
		"https://169.254.169.254/":     "metadata", // inside 169.254/16, but metadata
		"https://[fd00:ec2::254]/":     "metadata",
		"https://[::1]/":               "loopback", // 127/8 does not cover ::1
		"https://localhost/":           "names this host",
		"http://[64:ff9b::a9fe:a9fe]/": "metadata",
	} {
		err := checkURL(t, g, raw)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error saying %q", raw, err, want)
		}
	}
	// A metadata address passes only a prefix of that one address.
	one := NewGuard(prefixes("169.254.169.254/32"))
	if err := checkURL(t, one, "http://169.254.169.254/"); err != nil {
		t.Errorf("single-address allow: %v", err)
	}
}

func TestGuardLookupTimeout(t *testing.T) {
	t.Parallel()
	g := NewGuard(nil, WithResolver(testDNS), WithLookupTimeout(20*time.Millisecond))
	start := time.Now()
	err := checkURL(t, g, "https://slow.example/")
	if err == nil || !strings.Contains(err.Error(), "does not resolve: timeout") {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("lookup took %v", d)
	}
}

func TestGuardURLRules(t *testing.T) {
	t.Parallel()
	rules := NewGuard(nil, WithResolver(testDNS)).URLRules()
	err := task.ValidateWebhookURL("https://127.0.0.1/hook", "target.webhook", rules)
	if !task.IsCode(err, task.CodeInvalidArgument) || !strings.Contains(err.Error(), "target.webhook: 127.0.0.1 is a loopback address") {
		t.Fatalf("got %v", err)
	}
	if err := task.ValidateWebhookURL("https://example.com/hook", "target.webhook", rules); err != nil {
		t.Fatal(err)
	}
	if err := task.ValidateWebhookURL("http://example.com/hook", "target.webhook", rules); err == nil {
		t.Fatal("http to a public host accepted")
	}
}

func TestGuardRefusedError(t *testing.T) {
	t.Parallel()
	err := checkURL(t, NewGuard(nil, WithResolver(testDNS)), "https://loopback.example/")
	var re *RefusedError
	if !errors.As(err, &re) || re.Host != "loopback.example" || re.Addr != netip.MustParseAddr("127.0.0.1") {
		t.Fatalf("got %#v", err)
	}
	want := "loopback.example resolves to 127.0.0.1, which is a loopback address; list its range with --webhook-allow to permit it"
	if err.Error() != want {
		t.Fatalf("got  %q\nwant %q", err, want)
	}
}

// TestGuardDial dials a real loopback listener through Control: refused by
// default, connected when 127.0.0.0/8 is allowed.
func TestGuardDial(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()

	d := net.Dialer{Timeout: time.Second, Control: NewGuard(nil).Control}
	c, err := d.Dial("tcp", addr)
	var re *RefusedError
	if err == nil {
		c.Close()
		t.Fatal("dial to 127.0.0.1 allowed")
	} else if !errors.As(err, &re) || re.Addr.String() != "127.0.0.1" {
		t.Fatalf("got %v", err)
	}

	// A name is checked on the address it resolved to (the hosts file here).
	if _, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip4", "localhost"); err == nil {
		_, port, _ := net.SplitHostPort(addr)
		if c, err := d.Dial("tcp4", net.JoinHostPort("localhost", port)); err == nil {
			c.Close()
			t.Fatal("dial to localhost allowed")
		} else if !errors.As(err, &re) {
			t.Fatalf("localhost: got %v", err)
		}
	}

	d.Control = NewGuard(prefixes("127.0.0.0/8")).Control
	c, err = d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial with 127.0.0.0/8 allowed: %v", err)
	}
	c.Close()
}

func TestGuardControlContextPlainHTTP(t *testing.T) {
	t.Parallel()
	g := NewGuard(prefixes("10.0.0.0/8"))
	plain := withPlainHTTP(context.Background())
	if err := g.ControlContext(context.Background(), "tcp4", "93.184.216.34:443", nil); err != nil {
		t.Fatalf("https to a public address: %v", err)
	}
	if err := g.ControlContext(plain, "tcp4", "93.184.216.34:80", nil); !errors.Is(err, ErrPlainHTTP) {
		t.Fatalf("http to a public address: %v", err)
	}
	if err := g.ControlContext(plain, "tcp4", "10.0.0.5:80", nil); err != nil {
		t.Fatalf("http to an allowed address: %v", err)
	}
	if err := g.ControlContext(plain, "tcp6", "[::1]:80", nil); err == nil {
		t.Fatal("http to ::1 allowed")
	}
	if err := g.Control("tcp", "not-an-address", nil); err == nil {
		t.Fatal("unreadable dial address allowed")
	}
}

func TestParseLegacyIPv4(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"2130706433": "127.0.0.1",
		"0x7f.1":     "127.0.0.1",
		"0x7f000001": "127.0.0.1",
		"0177.0.0.1": "127.0.0.1",
		"127.1":      "127.0.0.1",
		"10.1.65535": "10.1.255.255",
		"0":          "0.0.0.0",
		"4294967295": "255.255.255.255",
		"1.2.3.4":    "1.2.3.4",
		"4294967296": "",
		"1.2.3.256":  "",
		"256.1":      "",
		"1.2.65536":  "",
		"08.1.1.1":   "", // 8 is not an octal digit
		"0x":         "",
		"1..1":       "",
		"1.2.3.4.5":  "",
	} {
		ip, ok := parseLegacyIPv4(in)
		got := ""
		if ok {
			got = ip.String()
		}
		if got != want {
			t.Errorf("parseLegacyIPv4(%q) = %q, want %q", in, got, want)
		}
	}
}
