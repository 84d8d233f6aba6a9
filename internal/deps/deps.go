//go:build tools

// Package deps pins the modules that the Kubernetes-side commands (kubectl-sidesync, the image
// build) use, so that go.mod and go.sum hold them before the code that imports them is written.
// It is never built.
package deps

import (
	_ "github.com/google/go-containerregistry/pkg/authn"
	_ "github.com/google/go-containerregistry/pkg/name"
	_ "github.com/google/go-containerregistry/pkg/registry"
	_ "github.com/google/go-containerregistry/pkg/v1"
	_ "github.com/google/go-containerregistry/pkg/v1/empty"
	_ "github.com/google/go-containerregistry/pkg/v1/layout"
	_ "github.com/google/go-containerregistry/pkg/v1/mutate"
	_ "github.com/google/go-containerregistry/pkg/v1/remote"
	_ "github.com/google/go-containerregistry/pkg/v1/tarball"
	_ "github.com/google/go-containerregistry/pkg/v1/types"
	_ "k8s.io/api/batch/v1"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	_ "k8s.io/apimachinery/pkg/util/yaml"
	_ "sigs.k8s.io/yaml"
)
