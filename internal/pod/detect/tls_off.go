//go:build nokubeapi

package detect

import (
	"context"
	"errors"
	"net"
)

// tlsDialer is absent from builds with the nokubeapi tag: they leave out crypto/tls, which is
// about 2.2 MB of the binary and 1.7 MiB of its resident memory (BENCHMARKS.md), for pods
// that name their sidecars or carry a downward-API volume.
func tlsDialer(context.Context, string, string) (func(context.Context, string) (net.Conn, error), error) {
	return nil, errors.New("this sidesync was built with -tags nokubeapi, without the Kubernetes API")
}
