package resolve

import (
	"fmt"
	"io"
	"net/http"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// What is read from a registry is bounded, whatever the registry declares: a config blob that
// claimed 512 MiB cost the plugin 1.2 GB (go-containerregistry reads a blob up to its declared
// size, and a declared size of -1 not at all, and a manifest up to 100 MiB).
const (
	// MaxConfig is the largest image config read. Configs are a few KiB; the bound is checked
	// against the size the manifest declares, before the config is fetched.
	MaxConfig = 4 << 20
	// MaxAnswer is the largest body of any registry answer read (manifests, indexes, configs,
	// tokens, errors): containerd's bound for manifests, which the OCI distribution spec asks
	// registries to accept at least.
	MaxAnswer = 4 << 20
	// MaxHeader is the largest header of a registry answer read (net/http's default is 10 MiB).
	MaxHeader = 64 << 10
)

// configFile reads img's config, refusing one whose manifest declares more than MaxConfig, or
// no size, before fetching it.
func configFile(img v1.Image) (*v1.ConfigFile, error) {
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	if s := m.Config.Size; s < 0 || s > MaxConfig {
		return nil, fmt.Errorf("config of %d bytes: larger than %s, or of no size: refused", s, bytesOf(MaxConfig))
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return cf, nil
}

// transport is o.Transport (remote.DefaultTransport when nil, with headers bounded by
// MaxHeader), each answer's body bounded by MaxAnswer.
func (o Options) transport() http.RoundTripper {
	base := o.Transport
	if base == nil {
		t := remote.DefaultTransport.(*http.Transport).Clone()
		t.MaxResponseHeaderBytes = MaxHeader
		base = t
	}
	return limitBodies{base: base, max: MaxAnswer}
}

// limitBodies bounds the body of every answer by max bytes: reading past it is an error, and
// so is an answer that declares more, before anything is read.
type limitBodies struct {
	base http.RoundTripper
	max  int64
}

func (l limitBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	tooLarge := &tooLargeError{host: req.URL.Host, path: req.URL.Path, max: l.max}
	if resp.ContentLength > l.max {
		resp.Body.Close()
		resp.Body, resp.ContentLength = io.NopCloser(errReader{tooLarge}), -1
		return resp, nil
	}
	resp.Body = &limitedBody{rc: resp.Body, left: l.max, err: tooLarge}
	return resp, nil
}

// tooLargeError is an answer larger than the bound. The URL's query is left out: a redirect
// to a blob store signs its URLs there.
type tooLargeError struct {
	host, path string
	max        int64
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("the answer to GET %s%s is larger than %s: not read", e.host, e.path, bytesOf(e.max))
}

// bytesOf is n bytes for a message: "4 MiB", "10 bytes".
func bytesOf(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// limitedBody reads rc up to left bytes, then fails with err if rc has more.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
	err  error
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, b.err
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

// errReader fails every read with err.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
