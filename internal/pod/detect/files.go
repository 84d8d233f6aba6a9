package detect

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/sidesync/sidesync/internal/pod/regfile"
)

// accountFile is a file of the service account's volume, which the kubelet puts in the pod
// (its token, the cluster's CA, the namespace), with its bound: a file larger is not one the
// kubelet wrote, and is refused rather than read whole into the pod binary's memory.
type accountFile struct {
	name  string
	limit int
	why   string // why the bound is what it is, for the refusal
}

// The service account's files sidesync reads, but for the cluster's CA (caFile, in tls.go, which
// builds without it leave out). They never change.
var (
	tokenFile     = accountFile{"token", 64 << 10, "a service-account token is a JWT of a few KiB"}
	namespaceFile = accountFile{"namespace", 1 << 10, "a namespace's name is at most 63 characters"}
)

// path is where the file is in the service account's volume at dir.
func (f accountFile) path(dir string) string { return filepath.Join(dir, f.name) }

// read reads the file in the service account's volume at dir with readBounded, giving up when
// ctx ends.
func (f accountFile) read(ctx context.Context, dir string) ([]byte, error) {
	return readWithin(ctx, func() ([]byte, error) { return readBounded(f.path(dir), f.limit, f.why) })
}

// readBounded reads a file someone else put in the pod (the downward-API volume, the service
// account's files) with regfile.Read: a regular file only, opened without blocking (a FIFO put
// there would block the open forever, and sidesync with it, deaf to SIGTERM), and at most limit
// bytes, where a refusal for size says why the bound is what it is (bound).
func readBounded(path string, limit int, bound string) ([]byte, error) {
	data, err := regfile.Read(path, limit)
	if _, tooLarge := errors.AsType[*regfile.TooLarge](err); tooLarge {
		return nil, fmt.Errorf("%w: %s", err, bound)
	}
	return data, err
}

// readWithin runs read and waits for its answer until ctx ends. A read stuck in the kernel (a
// hung file system) is left behind: the process ends soon after a stop signal anyway.
func readWithin(ctx context.Context, read func() ([]byte, error)) ([]byte, error) {
	type answer struct {
		data []byte
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		data, err := read()
		done <- answer{data, err}
	}()
	select {
	case a := <-done:
		return a.data, a.err
	case <-ctx.Done():
		return nil, fmt.Errorf("not read: %w", context.Cause(ctx))
	}
}
