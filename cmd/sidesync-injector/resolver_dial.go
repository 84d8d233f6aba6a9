package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sidesync/sidesync/internal/cluster/inject/resolve"
)

// The SSRF guard. A pod names its image, and so the host the injector connects to: without a
// guard, a pod with image 169.254.169.254/latest/x would make the injector ask the cloud's
// metadata server, and 10.0.0.1:2379/x an etcd inside the cluster network. The guard checks
// the address each connection is actually made to (net.Dialer.Control runs after the name is
// resolved, before connect(2), for every address tried), so a name that resolves to a public
// address when checked and to a private one when used (DNS rebinding) gains nothing. Token
// realms and blob redirects go through the same transport, so they are checked too.

// refusedRange is a range of addresses the injector does not connect to unless allow-listed.
type refusedRange struct {
	prefix netip.Prefix
	what   string
}

// refusedRanges are checked in order; the first match names the refusal. IPv4-mapped IPv6
// addresses (::ffff:a.b.c.d) are checked as their IPv4 address, and NAT64's well-known prefix
// by the IPv4 address it embeds.
var refusedRanges = func() []refusedRange {
	var rs []refusedRange
	for _, r := range []struct{ cidr, what string }{
		{"0.0.0.0/8", `"this network" (RFC 791)`},
		{"10.0.0.0/8", "private (RFC 1918)"},
		{"100.64.0.0/10", "shared address space, CGNAT (RFC 6598)"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local, cloud metadata (RFC 3927)"},
		{"172.16.0.0/12", "private (RFC 1918)"},
		{"192.0.0.0/24", "IETF protocol assignments (RFC 6890)"},
		{"192.168.0.0/16", "private (RFC 1918)"},
		{"198.18.0.0/15", "benchmarking (RFC 2544)"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved, broadcast"},
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"::/96", "IPv4-compatible (deprecated)"},
		{"fc00::/7", "unique local (RFC 4193)"},
		{"fe80::/10", "link-local"},
		{"fec0::/10", "site-local (deprecated)"},
		{"ff00::/8", "multicast"},
	} {
		rs = append(rs, refusedRange{netip.MustParsePrefix(r.cidr), r.what})
	}
	return rs
}()

// nat64 is NAT64's well-known prefix (RFC 6052): 64:ff9b::a9fe:a9fe reaches 169.254.169.254.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// dialGuard refuses connections to refusedRanges unless allow has the address.
type dialGuard struct {
	allow   []netip.Prefix
	refused prometheus.Counter // nil: not counted
}

// refusedError is a connection the guard refused; it names the address and the flag.
type refusedError struct {
	addr netip.Addr
	what string
}

func (e *refusedError) Error() string {
	bits := 32
	if e.addr.Is6() {
		bits = 128
	}
	return fmt.Sprintf("registry address %s is %s: refused (SSRF guard); if this registry is meant, allow it with --registry-allow=%s/%d", e.addr, e.what, e.addr, bits)
}

// check says whether the injector may connect to addr ("ip:port" or an IP).
func (g *dialGuard) check(address string) error {
	host := address
	if h, _, err := net.SplitHostPort(address); err == nil {
		host = h
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("registry address %q is not an IP address: refused (SSRF guard)", address)
	}
	addr = addr.WithZone("").Unmap()
	for _, p := range g.allow {
		if p.Contains(addr) {
			return nil
		}
	}
	checked := addr
	if nat64.Contains(addr) {
		b := addr.As16()
		checked = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		for _, p := range g.allow {
			if p.Contains(checked) {
				return nil
			}
		}
	}
	for _, r := range refusedRanges {
		if r.prefix.Contains(checked) {
			what := r.what
			if checked != addr {
				what = fmt.Sprintf("NAT64 of %s, %s", checked, what)
			}
			return &refusedError{addr: addr, what: what}
		}
	}
	return nil
}

// control is net.Dialer.Control: it runs with the address about to be connected to.
func (g *dialGuard) control(_, address string, _ syscall.RawConn) error {
	err := g.check(address)
	if err != nil && g.refused != nil {
		g.refused.Inc()
	}
	return err
}

// dialContext dials through the guard.
func (g *dialGuard) dialContext() func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: g.control}
	return d.DialContext
}

// transport is the registries' HTTP transport: remote.DefaultTransport's settings, connections
// through the guard, headers bounded by resolve.MaxHeader as resolve bounds its own transport
// (resolve still bounds every body by resolve.MaxAnswer around this one). No proxy: through a
// proxy the guard would see only the proxy's address, and the proxy could connect anywhere.
func (g *dialGuard) transport() http.RoundTripper {
	t := remote.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = g.dialContext()
	t.MaxResponseHeaderBytes = resolve.MaxHeader
	return t
}

// registryOptions are the command line's registry settings, for --resolve.
type registryOptions struct {
	platforms []v1.Platform  // --platforms; none: every linux platform
	allow     []netip.Prefix // --registry-allow
}

// parsePlatforms reads --platforms: linux platforms, comma-separated.
func parsePlatforms(s string) ([]v1.Platform, error) {
	var ps []v1.Platform
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := v1.ParsePlatform(f)
		if err == nil {
			*p = resolve.Normalize(*p)
			_, err = resolve.PlatformKey(*p)
		}
		if err != nil || p.OS != "linux" {
			return nil, fmt.Errorf("--platforms: %q is not a linux platform (linux/amd64, linux/arm64/v8)", f)
		}
		ps = append(ps, *p)
	}
	return ps, nil
}

// parseAllow reads --registry-allow: CIDR ranges or single addresses, comma-separated.
func parseAllow(s string) ([]netip.Prefix, error) {
	var ps []netip.Prefix
	var errs []error
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				errs = append(errs, fmt.Errorf("--registry-allow: %q is neither a CIDR range (10.0.0.0/8, fd00::/8) nor an address", f))
				continue
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		ps = append(ps, p.Masked())
	}
	return ps, errors.Join(errs...)
}
