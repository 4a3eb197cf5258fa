package deliver

import (
	"net/netip"
	"strconv"
	"strings"
)

// addrRange is one special-purpose range and what the guard calls it.
type addrRange struct {
	p    netip.Prefix
	what string
}

func ranges(pairs ...string) []addrRange {
	out := make([]addrRange, 0, len(pairs)/2)
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, addrRange{netip.MustParsePrefix(pairs[i]), pairs[i+1]})
	}
	return out
}

// v4Refused lists the IPv4 ranges a webhook may not reach (the IANA IPv4
// special-purpose registry, less the few globally reachable anycast entries).
var v4Refused = ranges(
	"0.0.0.0/8", "a this-network (0.0.0.0/8)",
	"10.0.0.0/8", "a private",
	"100.64.0.0/10", "a shared (CGNAT)",
	"127.0.0.0/8", "a loopback",
	"169.254.0.0/16", "a link-local",
	"172.16.0.0/12", "a private",
	"192.0.0.0/24", "an IETF protocol",
	"192.0.2.0/24", "a documentation",
	"192.88.99.0/24", "a 6to4 relay",
	"192.168.0.0/16", "a private",
	"198.18.0.0/15", "a benchmarking",
	"198.51.100.0/24", "a documentation",
	"203.0.113.0/24", "a documentation",
	"224.0.0.0/4", "a multicast",
	"255.255.255.255/32", "the broadcast",
	"240.0.0.0/4", "a reserved",
)

// v6Refused lists the IPv6 ranges a webhook may not reach. Anything outside
// 2000::/3 (global unicast) is refused as well; the ranges that wrap an IPv4
// address are handled before this table.
var v6Refused = ranges(
	"::/128", "the unspecified",
	"::1/128", "a loopback",
	"64:ff9b:1::/48", "a local-use NAT64",
	"100::/64", "a discard-only",
	"2001::/23", "an IETF protocol",
	"2001:db8::/32", "a documentation",
	"3fff::/20", "a documentation",
	"5f00::/16", "an SRv6",
	"fc00::/7", "a private (unique-local)",
	"fe80::/10", "a link-local",
	"fec0::/10", "a site-local",
	"ff00::/8", "a multicast",
)

// metadata lists the cloud instance-metadata and host-agent endpoints. They
// are refused even inside a broad --webhook-allow range; only an allow prefix
// that is that single address lets one through.
var metadata = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"), // AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean
	netip.MustParseAddr("169.254.169.253"), // AWS DNS
	netip.MustParseAddr("169.254.169.123"), // AWS time
	netip.MustParseAddr("169.254.170.2"),   // AWS ECS task metadata
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("168.63.129.16"),   // Azure WireServer (a public address)
	netip.MustParseAddr("192.0.0.192"),     // Oracle Cloud
	netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
	netip.MustParseAddr("fd00:ec2::253"),   // AWS DNS over IPv6
	netip.MustParseAddr("fd00:ec2::23"),    // AWS ECS over IPv6
}

// Ranges that wrap an IPv4 address in an IPv6 one.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	teredo    = netip.MustParsePrefix("2001::/32")
	global6   = netip.MustParsePrefix("2000::/3")
)

func isMetadata(ip netip.Addr) bool {
	for _, m := range metadata {
		if ip == m {
			return true
		}
	}
	return false
}

// classify names why ip (IPv4, or IPv6 that wraps no IPv4) is refused, or
// returns "" for an address a webhook may reach. The name reads after "is":
// "a loopback", "the broadcast".
func classify(ip netip.Addr) string {
	if isMetadata(ip) {
		return "a cloud metadata"
	}
	if ip.Is4() {
		for _, r := range v4Refused {
			if r.p.Contains(ip) {
				return r.what
			}
		}
		return ""
	}
	for _, r := range v6Refused {
		if r.p.Contains(ip) {
			return r.what
		}
	}
	if !global6.Contains(ip) {
		return "a reserved (not global unicast)"
	}
	return ""
}

// embeddedV4 returns the IPv4 address that an IPv6 address wraps: IPv4-mapped
// (::ffff:a.b.c.d), NAT64 (64:ff9b::a.b.c.d), 6to4 (2002:AABB:CCDD::) or
// Teredo (the client address, stored inverted in the last 32 bits). form
// names the wrapping.
func embeddedV4(ip netip.Addr) (v4 netip.Addr, form string, ok bool) {
	if ip.Is4In6() {
		return ip.Unmap(), "IPv4-mapped", true
	}
	if !ip.Is6() {
		return netip.Addr{}, "", false
	}
	b := ip.As16()
	switch {
	case nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), "NAT64", true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), "6to4", true
	case teredo.Contains(ip):
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), "Teredo", true
	}
	return netip.Addr{}, "", false
}

// teredoServer returns the Teredo server address of a Teredo IPv6 address.
func teredoServer(ip netip.Addr) netip.Addr {
	b := ip.As16()
	return netip.AddrFrom4([4]byte(b[4:8]))
}

// numericHost reports whether host would be taken for an IPv4 address by a
// browser or a C resolver: its last label is a decimal or 0x-hex number (the
// WHATWG URL rule). Such a host is never sent to DNS.
func numericHost(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if l := strings.ToLower(last); strings.HasPrefix(l, "0x") {
		for _, c := range l[2:] {
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
		return true
	}
	for _, c := range last {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseLegacyIPv4 parses the inet_aton forms that C resolvers and browsers
// accept: one to four parts, each decimal, 0x-hex or 0-led octal, the last
// part filling the bytes that remain (127.1, 2130706433, 0x7f.1, 0177.0.0.1).
func parseLegacyIPv4(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		base := 10
		switch {
		case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
			base, p = 16, p[2:]
		case len(p) > 1 && p[0] == '0':
			base, p = 8, p[1:]
		}
		v, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var n uint64
	for i, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		n |= v << (24 - 8*i)
	}
	last := vals[len(vals)-1]
	if last >= 1<<(8*(5-len(vals))) {
		return netip.Addr{}, false
	}
	n |= last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}
