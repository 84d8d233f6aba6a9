// Package detect finds out which sidecars the pod has, when none is configured: from the pod's
// annotations and labels in a downward-API volume, or else from the pod itself in the
// Kubernetes API (one small, bounded, standard-library request). Probing well-known ports is
// not detection: the sidecar may not have started yet.
package detect

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sidesync/sidesync/sidecar"
)

// Annotations and labels that injectors put on the pods they inject (sidecar-protocols.md;
// each injector's source for the constant).
const (
	istioStatus         = "sidecar.istio.io/status"      // JSON listing the injected containers
	istioStatusPort     = "status.sidecar.istio.io/port" // the agent's port, 15020 by default
	linkerdVersion      = "linkerd.io/proxy-version"
	linkerdAdminPort    = "config.linkerd.io/admin-port"
	linkerdShutdown     = "config.linkerd.io/proxy-admin-shutdown"
	consulInjected      = "consul.hashicorp.com/connect-inject-status"
	consulGracefulPort  = "consul.hashicorp.com/sidecar-proxy-lifecycle-graceful-port"
	kumaInjected        = "kuma.io/sidecar-injected"
	kumaAdminPort       = "kuma.io/envoy-admin-port"
	daprEnabled         = "dapr.io/enabled"
	daprHTTPPort        = "dapr.io/http-port"
	vaultInjected       = "vault.hashicorp.com/agent-inject-status"
	vaultPrePopulate    = "vault.hashicorp.com/agent-pre-populate-only"
	vaultEnableQuit     = "vault.hashicorp.com/agent-enable-quit"
	vaultListenerPort   = "vault.hashicorp.com/agent-cache-listener-port"
	osmProxyLabel       = "osm-proxy-uuid" // a label, on every pod OSM injected
	linkerdNativePrefix = "proxy-enable-native-sidecar"
)

// Found is a sidecar found by detection, and what was learnt on the way.
type Found struct {
	Sidecar sidecar.Sidecar
	Why     string   // the annotation, label or container that gave it away
	Notes   []string // things the user should know (a quit endpoint that is off, say)
}

// readPodInfo reads the "annotations" and "labels" files of a downward-API volume: one
// key="value" per line, the value quoted as Go does. Missing files give empty maps.
func readPodInfo(dir string) (annotations, labels map[string]string, found bool) {
	annotations, okA := readKeyValues(filepath.Join(dir, "annotations"))
	labels, okL := readKeyValues(filepath.Join(dir, "labels"))
	return annotations, labels, okA || okL
}

func readKeyValues(path string) (map[string]string, bool) {
	m := make(map[string]string)
	f, err := os.Open(path)
	if err != nil {
		return m, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 1<<20) // Istio's status annotation is long
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), "=")
		if !ok {
			continue
		}
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		m[k] = v
	}
	return m, true
}

// fromMetadata finds the sidecars that injectors marked on the pod.
func fromMetadata(ann, labels map[string]string) []Found {
	var found []Found
	if st, ok := ann[istioStatus]; ok {
		found = append(found, istioFound(st, ann))
	}
	if _, ok := ann[linkerdVersion]; ok {
		found = append(found, linkerdFound(ann))
	}
	if ann[consulInjected] == "injected" {
		found = append(found, withPort("consul", consulInjected, ann[consulGracefulPort], true))
	}
	if ann[kumaInjected] == "true" {
		found = append(found, withPort("kuma", kumaInjected, ann[kumaAdminPort], false))
	}
	if ann[daprEnabled] == "true" {
		found = append(found, withPort("dapr", daprEnabled, ann[daprHTTPPort], false))
	}
	if _, ok := labels[osmProxyLabel]; ok {
		found = append(found, withPort("osm", "label "+osmProxyLabel, "", false))
	}
	if ann[vaultInjected] == "injected" && ann[vaultPrePopulate] != "true" {
		found = append(found, vaultFound(ann))
	}
	return found
}

// withPort is the profile called name, moved to port when an annotation gives one: both the
// readiness check and the quit call, or only the quit call when quitOnly.
func withPort(name, why, port string, quitOnly bool) Found {
	sc, _ := sidecar.Profile(name)
	f := Found{Sidecar: sc, Why: why}
	if port == "" {
		return f
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		f.Notes = append(f.Notes, "ignoring port "+strconv.Quote(port)+" from the annotations: not a port")
		return f
	}
	if quitOnly {
		f.Sidecar = f.Sidecar.WithPorts(0, n)
	} else {
		f.Sidecar = f.Sidecar.WithPorts(n, n)
	}
	return f
}

// istioFound reads Istio's status annotation: the proxy is native when it was injected as an
// init container (restartPolicy: Always; Istio 1.19+ with native sidecars on).
func istioFound(status string, ann map[string]string) Found {
	f := withPort("istio", istioStatus, ann[istioStatusPort], true)
	var st struct {
		InitContainers []string `json:"initContainers"`
	}
	if json.Unmarshal([]byte(status), &st) == nil && slices.Contains(st.InitContainers, "istio-proxy") {
		f.Sidecar.Native = true
	}
	return f
}

// linkerdFound reads Linkerd's annotations: admin port, native sidecar, shutdown endpoint.
func linkerdFound(ann map[string]string) Found {
	f := withPort("linkerd", linkerdVersion, ann[linkerdAdminPort], false)
	for _, prefix := range []string{"config.linkerd.io/", "config.beta.linkerd.io/", "config.alpha.linkerd.io/"} {
		if ann[prefix+linkerdNativePrefix] == "true" {
			f.Sidecar.Native = true
		}
	}
	if !f.Sidecar.Native && ann[linkerdShutdown] != "enabled" {
		f.Notes = append(f.Notes, "Linkerd's /shutdown endpoint is off unless the pod has "+linkerdShutdown+": enabled; the quit will fail without it")
	}
	return f
}

// vaultFound is Vault Agent: nothing to wait for, and a quit only if its quit API is on.
func vaultFound(ann map[string]string) Found {
	f := withPort("vault", vaultInjected, ann[vaultListenerPort], false)
	if ann[vaultEnableQuit] != "true" {
		f.Sidecar.Quit = nil
		f.Notes = append(f.Notes, "Vault Agent's quit API is off ("+vaultEnableQuit+" is not \"true\"): it cannot be told to quit")
	}
	return f
}
