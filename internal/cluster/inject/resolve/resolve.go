// Package resolve reads from a registry what a container image runs: the ENTRYPOINT and CMD of
// its config on every linux platform it has, and the digest they were read at. It is the I/O
// half of `kubectl sidesync inject --resolve`, kept apart so that internal/cluster/inject stays pure.
package resolve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/sidesync/sidesync/internal/cluster/inject"
)

// Options says how to reach the registries and which platforms to read.
type Options struct {
	// Keychain finds credentials for a registry; nil means authn.DefaultKeychain (the Docker
	// config file and its credential helpers, as docker, crane and kubectl plugins use).
	Keychain authn.Keychain
	// Platforms limits which platforms of an image index are read; none means every linux
	// platform. linux/arm64 and linux/arm64/v8 name one platform, as do linux/arm and
	// linux/arm/v7, and a platform without a variant matches every variant (see matches). An
	// image that is no index has one platform, which is read whatever this says.
	Platforms []v1.Platform
	// Transport is the HTTP transport; nil means remote.DefaultTransport, with headers
	// bounded by MaxHeader. Bodies are bounded by MaxAnswer either way.
	Transport http.RoundTripper
	// UserAgent is sent to the registry, when set.
	UserAgent string
	// Warn, when set, is told of each entry of an index that is skipped because the wrapper
	// could not look its platform up (SIDESYNC_PLATFORM_COMMANDS); the message names the
	// image and the entry.
	Warn func(message string)
}

// Images resolves every image; each image that cannot be resolved has its error in errs and no
// entry in the result. ctx bounds the whole.
func Images(ctx context.Context, images []string, o Options) (eps inject.Entrypoints, errs map[string]error) {
	eps, errs = inject.Entrypoints{}, map[string]error{}
	for _, image := range images {
		if _, done := eps[image]; done {
			continue
		}
		r, err := Image(ctx, image, o)
		if err != nil {
			errs[image] = err
			continue
		}
		eps[image] = r
	}
	return eps, errs
}

// Image reads what image runs on each of its platforms, and pins it to the digest read: of the
// index for a multi-platform image, so that each node still pulls its own platform. Entries of
// an index that are not linux images (attestation manifests, whose platform is
// unknown/unknown; windows images; nested indexes) are skipped.
func Image(ctx context.Context, image string, o Options) (inject.ResolvedImage, error) {
	ref, err := name.ParseReference(image)
	if err != nil {
		return inject.ResolvedImage{}, err
	}
	desc, err := remote.Get(ref, o.remote(ctx)...)
	if err != nil {
		return inject.ResolvedImage{}, err
	}
	r := inject.ResolvedImage{Pinned: pin(image, desc.Digest)}
	switch {
	case desc.MediaType.IsIndex():
		r.Platforms, err = fromIndex(desc, image, o)
	case desc.MediaType.IsImage():
		r.Platforms, err = fromImage(desc)
	default:
		err = fmt.Errorf("%s is neither an image nor an image index", desc.MediaType)
	}
	if err != nil {
		return inject.ResolvedImage{}, err
	}
	return r, nil
}

// fromIndex reads the config of every linux image of an index that o.Platforms selects, under
// its platform normalised as containerd does (linux/AMD64 is linux/amd64). An entry whose
// platform the wrapper could not look up is skipped, with a warning when o.Platforms selects
// it; of two entries for one platform the first counts, as containerd picks it.
func fromIndex(desc *remote.Descriptor, image string, o Options) (map[string]inject.ImageCommand, error) {
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	out := map[string]inject.ImageCommand{}
	var seen []string      // the keys of the index's usable linux images
	var read []v1.Platform // the platforms read, to skip their repeats
	for _, m := range im.Manifests {
		if !isLinuxImage(m) {
			continue
		}
		p := *m.Platform
		key, err := PlatformKey(p)
		if err != nil {
			if o.wants(p) {
				o.warn(fmt.Sprintf("image %s: skipped the index entry %s: the wrapper could not look it up: %v", image, m.Digest, err))
			}
			continue
		}
		seen = append(seen, key)
		if slices.ContainsFunc(read, func(r v1.Platform) bool { return same(r, p) }) || !o.wants(p) {
			continue
		}
		out[key], err = readConfig(idx, m.Digest, key)
		if err != nil {
			return nil, err
		}
		read = append(read, p)
	}
	switch {
	case len(seen) == 0:
		return nil, errors.New("the image index has no linux image whose platform the wrapper can look up")
	case len(out) == 0:
		return nil, fmt.Errorf("no platform of the image index is among %s (it has %s)", o.platformList(), strings.Join(seen, ", "))
	}
	return out, nil
}

// isLinuxImage reports whether an index entry is a linux image (not an attestation manifest,
// whose platform is unknown/unknown, a windows image or a nested index).
func isLinuxImage(m v1.Descriptor) bool {
	return m.Platform != nil && Normalize(*m.Platform).OS == "linux" && m.MediaType.IsImage()
}

// readConfig reads the ENTRYPOINT and CMD of the index's image digest, for platform key.
func readConfig(idx v1.ImageIndex, digest v1.Hash, key string) (inject.ImageCommand, error) {
	img, err := idx.Image(digest)
	if err != nil {
		return inject.ImageCommand{}, fmt.Errorf("%s: %w", key, err)
	}
	cf, err := configFile(img)
	if err != nil {
		return inject.ImageCommand{}, fmt.Errorf("%s: %w", key, err)
	}
	return inject.ImageCommand{Entrypoint: cf.Config.Entrypoint, Cmd: cf.Config.Cmd}, nil
}

// fromImage reads the config of a single-platform image.
func fromImage(desc *remote.Descriptor) (map[string]inject.ImageCommand, error) {
	img, err := desc.Image()
	if err != nil {
		return nil, err
	}
	cf, err := configFile(img)
	if err != nil {
		return nil, err
	}
	// One platform: inject inlines its argv and writes no SIDESYNC_PLATFORM_COMMANDS, so
	// the key needs no check.
	p := Normalize(v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant})
	return map[string]inject.ImageCommand{format(p): {Entrypoint: cf.Config.Entrypoint, Cmd: cf.Config.Cmd}}, nil
}

// remote is the registry options: context, credentials, the transport with its bounds.
func (o Options) remote(ctx context.Context) []remote.Option {
	kc := o.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc), remote.WithTransport(o.transport()),
		remote.WithRetryBackoff(retryPauses)}
	if o.UserAgent != "" {
		opts = append(opts, remote.WithUserAgent(o.UserAgent))
	}
	return opts
}

// retryPauses are the pauses before go-containerregistry asks again after a 5xx, 408 or 429
// answer or a broken connection: 0.1 s, then 0.3 s. Those pauses do not watch the context, and
// its own (1 s, then 3 s) ran 3 s past --timeout with a registry that answered 503 forever.
var retryPauses = remote.Backoff{Duration: 100 * time.Millisecond, Factor: 3, Jitter: 0.1, Steps: 3}

// wants reports whether p is among the platforms to read.
func (o Options) wants(p v1.Platform) bool {
	return len(o.Platforms) == 0 || slices.ContainsFunc(o.Platforms, func(want v1.Platform) bool { return matches(p, want) })
}

// platformList is o.Platforms for a message.
func (o Options) platformList() string {
	var s []string
	for _, p := range o.Platforms {
		s = append(s, format(Normalize(p)))
	}
	return strings.Join(s, ", ")
}

// warn tells o.Warn, when set.
func (o Options) warn(message string) {
	if o.Warn != nil {
		o.Warn(message)
	}
}

// pin is image pinned to digest, with its repository as the user wrote it:
// "python:3.12" becomes "python@sha256:...".
func pin(image string, digest v1.Hash) string {
	repo, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndexByte(repo, ':'); i > strings.LastIndexByte(repo, '/') {
		repo = repo[:i]
	}
	return repo + "@" + digest.String()
}
