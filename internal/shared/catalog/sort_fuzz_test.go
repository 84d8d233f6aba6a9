package catalog_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/config"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// FuzzSort sorts a pod of an app and one arbitrary container (init or regular, with any name,
// image, command, args, variables, and any pod annotation), as detection, inject and lint all
// do. Nothing may panic; it is deterministic; every container is sorted exactly once; and the
// contract between inject and the pod binary holds: the --sidecar value config.FormatSidecar
// writes for a sidecar found (inject records it in the pod) reads back, with
// config.ParseSidecars, as exactly that sidecar.
func FuzzSort(f *testing.F) {
	const sqlImage = "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.0"
	f.Add("istio-proxy", "docker.io/istio/proxyv2:1.28.0", "", "", "", false, false, "sidecar.istio.io/status={}")
	f.Add("linkerd-proxy", "cr.l5d.io/linkerd/proxy", "", "", "LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED=true", true, true, "config.linkerd.io/admin-port=4192")
	f.Add("db", sqlImage, "", "--health-check\n--http-port\n9190\n--quitquitquit\n--admin-port=9191\np:r:i", "", false, false, "")
	f.Add("db", sqlImage, "/cloud-sql-proxy", "p:r:i", "CSQL_PROXY_QUITQUITQUIT=true\nCSQL_PROXY_ADMIN_PORT=9191\nCSQL_PROXY_HEALTH_CHECK=1", true, false, "")
	f.Add("db", sqlImage, "", "--health-check\n--http-port\n0\n--quitquitquit\n--admin-port=65536", "CSQL_PROXY_HTTP_PORT=x", false, false, "")
	f.Add("envoy", "envoyproxy/envoy:v1.36", "envoy", "-c\n/etc/envoy.yaml", "", false, false, "osm-proxy-uuid=1")
	f.Add("envoy", "840364872350.dkr.ecr.us-west-2.amazonaws.com/aws-appmesh-envoy:v1.29", "", "", "", false, false, "")
	f.Add("vault-agent", "hashicorp/vault", "", "", "", false, false, "vault.hashicorp.com/agent-inject-status=injected")
	f.Add("daprd", "ghcr.io/dapr/daprd:1.16", "", "", "", false, false, "dapr.io/http-port=3600")
	f.Add("airflow-xcom-sidecar", "alpine", "sh", "-c\nsleep 1", "", false, false, "")
	f.Add("app", "example/app", "", "", "", false, false, "linkerd.io/inject=enabled")
	f.Fuzz(func(t *testing.T, name, image, command, args, env string, native, startup bool, annotation string) {
		c := map[string]any{"name": name, "image": image, "command": words(command), "args": words(args), "env": envOf(env)}
		if native {
			c["restartPolicy"] = "Always"
		}
		if startup {
			c["startupProbe"] = map[string]any{}
		}
		key, value, _ := strings.Cut(annotation, "=")
		holder := map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{key: value}, "labels": map[string]any{key: value}},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "app-" + name}}},
		}
		if native {
			holder["spec"].(map[string]any)["initContainers"] = []any{c}
		} else {
			holder["spec"].(map[string]any)["containers"] = append(holder["spec"].(map[string]any)["containers"].([]any), c)
		}
		v, err := manifest.ReadPod(holder, "")
		if err != nil {
			return // no name, and the like
		}
		for _, o := range []catalog.Options{{}, {Requests: true}} {
			p := catalog.Sort(v, o)
			if again := catalog.Sort(v, o); describe(p) != describe(again) {
				t.Fatal("Sort is not deterministic")
			}
			checkSorted(t, v, p)
		}
	})
}

// checkSorted checks that every container is sorted once, and that what inject records of each
// known sidecar reads back as that sidecar.
func checkSorted(t *testing.T, v *manifest.PodView, p *catalog.Pod) {
	t.Helper()
	count := map[*manifest.Container]int{}
	for _, s := range p.Sidecars {
		if s.Container != nil {
			count[s.Container]++
		}
		if s.Entry == nil {
			continue
		}
		sc := s.Profile
		spec := config.FormatSidecar(s.Entry.Name, sc)
		parsed, err := config.ParseSidecars(spec, func(string) (string, bool) { return "", false })
		if err != nil || len(parsed) != 1 || parsed[0].Profile != s.Entry.Name || !reflect.DeepEqual(parsed[0].Sidecar, sc) {
			t.Fatalf("%s: FormatSidecar wrote %q, which reads back as %+v, %v; want %+v", s.Via, spec, parsed, err, sc)
		}
	}
	for _, s := range p.Stopped {
		count[s.Container]++
	}
	for _, c := range append(p.Apps, p.Inits...) {
		count[c]++
	}
	for _, c := range v.All() {
		if count[c] != 1 {
			t.Fatalf("container %s sorted %d times", c.Name, count[c])
		}
	}
}

// describe is everything Sort says of a pod, as text (an Entry holds functions, which
// reflect.DeepEqual never finds equal).
func describe(p *catalog.Pod) string {
	var b strings.Builder
	for _, line := range sorted(p) {
		b.WriteString(line + "\n")
	}
	for _, s := range p.Sidecars {
		fmt.Fprintf(&b, "%s %s %v %v %q %v %v\n", s.Via, endpoints(s), s.ReadyOff != nil, s.QuitOff != nil, s.Notes, s.Native, s.StartupProbe)
	}
	return b.String()
}

// words splits a fuzzed string into a command or args list; "" is none.
func words(s string) []any {
	if s == "" {
		return nil
	}
	var out []any
	for _, w := range strings.Split(s, "\n") {
		out = append(out, w)
	}
	return out
}

// envOf reads K=V lines as a container's env.
func envOf(s string) []any {
	var out []any
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && k != "" {
			out = append(out, map[string]any{"name": k, "value": v})
		}
	}
	return out
}
