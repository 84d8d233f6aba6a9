//go:build !nokubeapi

package detect

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
)

// caFile is the cluster's CA in the service account's volume.
var caFile = accountFile{"ca.crt", 1 << 20, "a cluster's CA bundle is PEM certificates of 1 to 2 KiB each"}

// tlsDialer returns a dial function that speaks TLS to the API server, trusting only the
// cluster's CA, read from the service account's volume at dir.
func tlsDialer(ctx context.Context, dir, host string) (func(context.Context, string) (net.Conn, error), error) {
	pem, err := caFile.read(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", caFile.path(dir))
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12}
	return func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		return tc, nil
	}, nil
}
