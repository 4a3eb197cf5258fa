package deliver

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/task"
)

// fixedResolver answers every name with one address.
type fixedResolver struct{ ip netip.Addr }

func (r fixedResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{r.ip}, nil
}

// FuzzGuardAddr: an IPv4 address and its IPv4-mapped IPv6 form are judged
// alike, and nothing the guard accepts is loopback, private, link-local,
// multicast or unspecified.
func FuzzGuardAddr(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "10.1.2.3", "169.254.169.254", "8.8.8.8", "::ffff:127.0.0.1", "64:ff9b::a00:1", "2002:7f00:1::", "fe80::1", "2001:db8::1"} {
		a := netip.MustParseAddr(s).As16()
		f.Add(a[:])
	}
	g := NewGuard(nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) != 16 {
			return
		}
		ip := netip.AddrFrom16([16]byte(b))
		err := g.CheckAddr(ip)
		if ip.Is4In6() && (err == nil) != (g.CheckAddr(ip.Unmap()) == nil) {
			t.Fatalf("%s and %s judged differently", ip, ip.Unmap())
		}
		u := ip.Unmap()
		if err == nil && (u.IsLoopback() || u.IsPrivate() || u.IsLinkLocalUnicast() || u.IsMulticast() || u.IsUnspecified()) {
			t.Fatalf("guard accepted %s", ip)
		}
	})
}

// FuzzWebhookURL: a URL the rules accept is https, has a host, carries no
// userinfo or fragment, is valid UTF-8 without NUL, and its host (a
// literal, or what it resolves to) passes the address guard.
func FuzzWebhookURL(f *testing.F) {
	for _, s := range []string{"https://example.com/hook", "http://127.0.0.1:8080/x", "https://u:p@example.com/", "https://2130706433/", "https://0x7f.1/",
		"https://[::ffff:10.0.0.1]/", "https://localhost/", "https://a.localhost./", "https://example.com/#f", "https://exa\x00mple.com/", "https://\xff/"} {
		f.Add(s, uint32(0x08080808))
		f.Add(s, uint32(0x7f000001))
	}
	f.Fuzz(func(t *testing.T, raw string, resolvesTo uint32) {
		ip := netip.AddrFrom4([4]byte{byte(resolvesTo >> 24), byte(resolvesTo >> 16), byte(resolvesTo >> 8), byte(resolvesTo)})
		g := NewGuard(nil, WithResolver(fixedResolver{ip}))
		err := task.ValidateWebhookURL(raw, "target.webhook", g.URLRules())
		if err != nil {
			if te, ok := err.(*task.Error); !ok || te.Code != task.CodeInvalidArgument || te.Field != "target.webhook" {
				t.Fatalf("%q: %#v", raw, err)
			}
			return
		}
		if bytes.IndexByte([]byte(raw), 0) >= 0 || len(raw) > task.MaxWebhookLen {
			t.Fatalf("accepted %q", raw)
		}
		if g.CheckAddr(ip) != nil {
			if _, err := netip.ParseAddr(hostOf(raw)); err != nil {
				t.Fatalf("accepted %q, which resolves to the refused %s", raw, ip)
			}
		}
	})
}

// hostOf is the bracket-less host of a URL the rules accepted.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// FuzzVerify: what Sign signs, Verify accepts within the tolerance; any
// other body, key or timestamp is refused; no header value panics.
func FuzzVerify(f *testing.F) {
	f.Add("whsec_c2VjcmV0", int64(1_790_000_000_000), []byte(`{"task":{}}`), "v1=00", "1790000000000")
	f.Add("", int64(0), []byte{}, "", "")
	f.Add("whsec_x", int64(-1), []byte("\x00\xff"), "v1=zz, v1=", "-9223372036854775808")
	f.Fuzz(func(t *testing.T, key string, ts int64, body []byte, sigHeader, tsHeader string) {
		now := time.UnixMilli(ts)
		h := http.Header{}
		h.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
		h.Set(HeaderSignature, Sign(key, ts, body))
		if err := Verify(key, h, body, now, time.Minute); err != nil {
			t.Fatalf("own signature refused: %v", err)
		}
		other := append(append([]byte{}, body...), 'x')
		if Verify(key, h, other, now, time.Minute) == nil {
			t.Fatal("a changed body verified")
		}
		if Verify(key+"x", h, body, now, time.Minute) == nil {
			t.Fatal("another key verified")
		}
		h2 := http.Header{}
		h2.Set(HeaderTimestamp, tsHeader)
		h2.Set(HeaderSignature, sigHeader)
		if Verify(key, h2, body, now, time.Minute) == nil {
			ts2, err := strconv.ParseInt(tsHeader, 10, 64)
			if err != nil || !strings.Contains(sigHeader, Sign(key, ts2, body)) {
				t.Fatalf("forged header verified: %q %q", sigHeader, tsHeader)
			}
		}
	})
}

// FuzzTargetHeaders: a header a webhook target is allowed to send reaches
// the receiver as exactly that one header, over errand's own HTTP/1.1
// writer and over net/http: no value can end the line or add another
// header (no injection), and none replaces errand's own.
func FuzzTargetHeaders(f *testing.F) {
	for _, s := range [][2]string{{"Authorization", "Bearer x"}, {"x-api-key", "a\tb"}, {"X-A", "1\r\nX-B: 2"}, {"Host", "h"},
		{"X-Errand-Signature", "v1=0"}, {"X A", "1"}, {"X-A", " 1 "}, {"X-A", "\x7f"}, {"X-A", "\xff"}, {"Webhook-Id", "w"}} {
		f.Add(s[0], s[1])
	}
	w := NewWebhook(WebhookOptions{})
	f.Cleanup(w.Close)
	f.Fuzz(func(t *testing.T, name, value string) {
		tg := &task.Target{Webhook: "http://127.0.0.1:9/in", Headers: map[string]string{name: value}}
		if task.ValidateTarget(tg, nil, "target", task.URLRules{AllowHTTP: true}) != nil {
			return
		}
		if !plainHeaders(tg.Headers) {
			t.Fatalf("%q: %q accepted but not written as it is", name, value)
		}
		r := request("http://127.0.0.1:9/in")
		r.Target = *tg
		s := w.sign(r, testNow)
		s.headers = tg.Headers
		// errand's writer, answered by a canned 204.
		var sent bytes.Buffer
		c := &plainConn{bw: bufio.NewWriter(&sent), br: bufio.NewReader(strings.NewReader("HTTP/1.1 204 No Content\r\n\r\n"))}
		pt, _ := parsePlain(r.Target.Webhook, r.Task.ID)
		if _, err := c.roundTrip(pt, &s, time.Minute); err != nil {
			t.Fatal(err)
		}
		req, err := s.request(context.Background(), r.Target.Webhook)
		if err != nil {
			t.Fatal(err)
		}
		var viaNet bytes.Buffer
		if err := req.Write(&viaNet); err != nil {
			t.Fatal(err)
		}
		for path, raw := range map[string][]byte{"plain": sent.Bytes(), "net/http": viaNet.Bytes()} {
			got, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
			if err != nil {
				t.Fatalf("%s: %q: %v", path, raw, err)
			}
			for k, v := range tg.Headers {
				if vs := got.Header.Values(k); len(vs) != 1 || vs[0] != v {
					t.Fatalf("%s: %s = %q, want %q once", path, k, vs, v)
				}
			}
			if got.Header.Get(HeaderSignature) != s.sig || got.Header.Get("User-Agent") != UserAgent || len(got.Header) != 9+len(tg.Headers) {
				t.Fatalf("%s: headers %v", path, got.Header)
			}
		}
	})
}
