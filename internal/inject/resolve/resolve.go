// Package resolve reads from a registry what a container image runs: the ENTRYPOINT and CMD of
// its config on every linux platform it has, and the digest they were read at. It is the I/O
// half of `kubectl sidesync inject --resolve`, kept apart so that internal/inject stays pure.
package resolve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/sidesync/sidesync/internal/inject"
)

// Options says how to reach the registries and which platforms to read.
type Options struct {
	// Keychain finds credentials for a registry; nil means authn.DefaultKeychain (the Docker
	// config file and its credential helpers, as docker, crane and kubectl plugins use).
	Keychain authn.Keychain
	// Platforms limits which platforms of an image index are read (v1.Platform.Satisfies:
	// "linux/arm64" matches linux/arm64/v8); none means every linux platform. An image that is
	// no index has one platform, which is read whatever this says.
	Platforms []v1.Platform
	// Transport is the HTTP transport; nil means remote.DefaultTransport.
	Transport http.RoundTripper
	// UserAgent is sent to the registry, when set.
	UserAgent string
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
		r.Platforms, err = fromIndex(desc, o)
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

// fromIndex reads the config of every linux image of an index that o.Platforms selects.
func fromIndex(desc *remote.Descriptor, o Options) (map[string]inject.ImageCommand, error) {
	idx, err := desc.ImageIndex()
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	out := map[string]inject.ImageCommand{}
	var seen []string
	for _, m := range im.Manifests {
		if m.Platform == nil || m.Platform.OS != "linux" || !m.MediaType.IsImage() {
			continue
		}
		key := platformKey(*m.Platform)
		seen = append(seen, key)
		if _, dup := out[key]; dup || !o.wants(*m.Platform) {
			continue
		}
		img, err := idx.Image(m.Digest)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("%s: config: %w", key, err)
		}
		out[key] = inject.ImageCommand{Entrypoint: cf.Config.Entrypoint, Cmd: cf.Config.Cmd}
	}
	switch {
	case len(seen) == 0:
		return nil, errors.New("the image index has no linux image")
	case len(out) == 0:
		return nil, fmt.Errorf("no platform of the image index is among %s (it has %s)", o.platformList(), strings.Join(seen, ", "))
	}
	return out, nil
}

// fromImage reads the config of a single-platform image.
func fromImage(desc *remote.Descriptor) (map[string]inject.ImageCommand, error) {
	img, err := desc.Image()
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	p := v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
	return map[string]inject.ImageCommand{platformKey(p): {Entrypoint: cf.Config.Entrypoint, Cmd: cf.Config.Cmd}}, nil
}

// remote is the registry options: context, credentials, transport.
func (o Options) remote(ctx context.Context) []remote.Option {
	kc := o.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(kc)}
	if o.Transport != nil {
		opts = append(opts, remote.WithTransport(o.Transport))
	}
	if o.UserAgent != "" {
		opts = append(opts, remote.WithUserAgent(o.UserAgent))
	}
	return opts
}

// wants reports whether p is among the platforms to read.
func (o Options) wants(p v1.Platform) bool {
	return len(o.Platforms) == 0 || slices.ContainsFunc(o.Platforms, func(want v1.Platform) bool { return p.Satisfies(want) })
}

func (o Options) platformList() string {
	var s []string
	for _, p := range o.Platforms {
		s = append(s, platformKey(p))
	}
	return strings.Join(s, ", ")
}

// platformKey is the key of EnvPlatformCommands: "os/arch[/variant]".
func platformKey(p v1.Platform) string {
	k := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		k += "/" + p.Variant
	}
	return k
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
