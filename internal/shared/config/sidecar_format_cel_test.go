package config

import (
	"fmt"
	"net/url"
	"strconv"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/testing/celeval"
)

// The differential tests of FormatSidecar's two renderings: FormatSidecarCEL, evaluated as the
// API server evaluates it (internal/testing/celeval), writes what FormatSidecar writes.

// celPod is how the policies bind the pod's annotations and labels.
var celPod = catalog.CELPod{Annotations: "variables.ann", Labels: "variables.lbl"}

// endpointState is one way Sort leaves a profile's endpoint.
type endpointState struct {
	dropped bool
	port    int // 0: the profile's
}

// TestFormatSidecarCELSettings: for every profile and every way Sort can leave each of its
// endpoints (dropped, its port, the profile's own port written out, another port), native or not,
// with a startup probe or not, FormatSidecarCEL writes what FormatSidecar writes of the sidecar.
func TestFormatSidecarCELSettings(t *testing.T) {
	env := celeval.For(t)
	n := 0
	for _, name := range catalog.ProfileNames() {
		def, _ := catalog.Profile(name)
		// One expression per profile, its inputs variables.
		rendered := catalog.SidecarCEL{Native: "variables.native", StartupProbe: "variables.probe"}
		if def.Ready != nil {
			rendered.Ready = &catalog.EndpointCEL{Dropped: "variables.readyDropped", Port: "variables.readyPort", Default: defaultPort(t, def.Ready.URL)}
		}
		if def.Quit != nil {
			rendered.Quit = &catalog.EndpointCEL{Dropped: "variables.quitDropped", Port: "variables.quitPort", Default: defaultPort(t, def.Quit.URL)}
		}
		expr := FormatSidecarCEL(name, rendered)
		for _, ready := range statesOf(t, def.Ready != nil, checkURL(def.Ready)) {
			for _, quit := range statesOf(t, def.Quit != nil, callURL(def.Quit)) {
				for _, flags := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
					sc := def
					sc.Native, sc.StartupProbe = flags[0], flags[1]
					// Sort moves an endpoint with WithPorts, and drops it.
					if sc.Ready = sc.WithPorts(ready.port, 0).Ready; ready.dropped {
						sc.Ready = nil
					}
					if sc.Quit = sc.WithPorts(0, quit.port).Quit; quit.dropped {
						sc.Quit = nil
					}
					vars := map[string]any{"native": flags[0], "probe": flags[1],
						"readyDropped": ready.dropped, "readyPort": int64(ready.port), "quitDropped": quit.dropped, "quitPort": int64(quit.port)}
					got, err := env.String(expr, nil, vars)
					if err != nil {
						t.Fatal(err)
					}
					if want := FormatSidecar(name, sc); got != want {
						t.Errorf("%s, ready %+v, quit %+v, native %v, startup probe %v: FormatSidecar writes %q, FormatSidecarCEL %q\nCEL: %s",
							name, ready, quit, flags[0], flags[1], want, got, expr)
					}
					n++
				}
			}
		}
	}
	t.Logf("%d sidecars", n)
}

// statesOf are the states of an endpoint at URL raw; one state (none) when the profile has none.
func statesOf(t *testing.T, has bool, raw string) []endpointState {
	t.Helper()
	if !has {
		return []endpointState{{}}
	}
	def := defaultPort(t, raw)
	return []endpointState{{dropped: true}, {dropped: true, port: def + 1}, {}, {port: def}, {port: 1}, {port: 65535}}
}

func defaultPort(t *testing.T, raw string) int {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("%s names no port: %v", raw, err)
	}
	return p
}

// syntheticPods reach settings the manifests do not: ports given by flags, variables and
// annotations, endpoints switched off, native sidecars with and without startup probes.
var syntheticPods = []string{
	`{spec: {containers: [{name: job, image: app}, {name: db, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2, args: [--health-check, --http-port, "9190", --quitquitquit, --admin-port=9191]}]}}`,
	`{spec: {containers: [{name: job, image: app}, {name: db, image: cloud-sql-proxy, args: [--health-check=false, --quitquitquit=false]}]}}`,
	`{spec: {containers: [{name: job, image: app}, {name: db, image: cloud-sql-proxy, env: [{name: CSQL_PROXY_HEALTH_CHECK, value: "true"}, {name: CSQL_PROXY_QUITQUITQUIT, value: "true"}, {name: CSQL_PROXY_HTTP_PORT, value: "9090"}, {name: CSQL_PROXY_ADMIN_PORT, value: "9192"}]}]}}`,
	`{spec: {initContainers: [{name: db, image: cloud-sql-proxy, restartPolicy: Always, args: [--health-check, --quitquitquit, --http-port=9190], startupProbe: {httpGet: {path: /startup, port: 9190}}}], containers: [{name: job, image: app}]}}`,
	`{spec: {initContainers: [{name: db, image: cloud-sql-proxy, restartPolicy: Always, args: [--health-check, --quitquitquit]}], containers: [{name: job, image: app}]}}`,
	`{metadata: {annotations: {linkerd.io/proxy-version: edge-26.8.3, config.linkerd.io/proxy-admin-shutdown: enabled, config.linkerd.io/admin-port: "4192"}}, spec: {containers: [{name: job, image: app}, {name: linkerd-proxy, image: cr.l5d.io/linkerd/proxy}]}}`,
	`{metadata: {annotations: {sidecar.istio.io/status: "{}", status.sidecar.istio.io/port: "15099"}}, spec: {initContainers: [{name: istio-proxy, image: istio/proxyv2, restartPolicy: Always, startupProbe: {httpGet: {port: 15099}}}], containers: [{name: job, image: app}]}}`,
	`{metadata: {annotations: {vault.hashicorp.com/agent-inject-status: injected, vault.hashicorp.com/agent-enable-quit: "false"}}, spec: {containers: [{name: job, image: app}, {name: vault-agent, image: hashicorp/vault}]}}`,
	`{metadata: {annotations: {dapr.io/enabled: "true", dapr.io/http-port: "3501"}}, spec: {containers: [{name: job, image: app}, {name: daprd, image: daprio/daprd}]}}`,
}

// celPodCase is a pod read both ways.
type celPodCase struct {
	name   string
	view   *manifest.PodView
	object map[string]any
}

// TestFormatSidecarCELPods: for every sidecar that catalog.Sort finds in a container of a pod of
// the corpus, the examples, inject's testdata and the synthetic pods (what inject records in
// contract.FoundAnnotation), FormatSidecarCEL of catalog.Entry.ProfileCEL writes what
// FormatSidecar writes of its profile.
func TestFormatSidecarCELPods(t *testing.T) {
	env := celeval.For(t)
	pods, err := celeval.Pods()
	if err != nil {
		t.Fatal(err)
	}
	var cases []celPodCase
	for _, p := range pods {
		cases = append(cases, celPodCase{p.Name, p.View, p.Object})
	}
	for i, y := range syntheticPods {
		j, err := yaml.YAMLToJSON([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		obj, err := manifest.DecodeJSONObject(j)
		if err != nil {
			t.Fatal(err)
		}
		v, err := manifest.ReadPod(obj, "")
		if err != nil {
			t.Fatalf("synthetic pod %d: %v", i, err)
		}
		object, _ := celeval.Object(obj).(map[string]any)
		cases = append(cases, celPodCase{fmt.Sprintf("synthetic pod %d", i), v, object})
	}
	found := 0
	for _, c := range cases {
		meta, _ := c.object["metadata"].(map[string]any)
		spec, _ := c.object["spec"].(map[string]any)
		var objects []any // as PodView.All lists the containers
		for _, key := range []string{"initContainers", "containers"} {
			l, _ := spec[key].([]any)
			objects = append(objects, l...)
		}
		sorted := catalog.Sort(c.view, catalog.Options{Requests: true})
		for _, s := range sorted.Sidecars {
			if s.Container == nil || s.Entry == nil {
				continue // inject records neither one announced only nor a native one nobody knows
			}
			i := indexOf(c.view.All(), s.Container)
			vars := map[string]any{"ann": mapOrEmpty(meta["annotations"]), "lbl": mapOrEmpty(meta["labels"]), "c": objects[i]}
			expr := "[variables.c].map(c, " + FormatSidecarCEL(s.Entry.Name, s.Entry.ProfileCEL(celPod, "c", s.Container.Init)) + ")[0]"
			got, err := env.String(expr, nil, vars)
			if err != nil {
				t.Fatalf("%s, container %s: %v", c.name, s.Container.Name, err)
			}
			if want := FormatSidecar(s.Entry.Name, s.Profile); got != want {
				t.Errorf("%s, container %s: FormatSidecar writes %q, FormatSidecarCEL %q\nCEL: %.600s", c.name, s.Container.Name, want, got, expr)
			}
			found++
		}
	}
	if found < 20 {
		t.Errorf("only %d sidecars found", found)
	}
	t.Logf("%d sidecars of %d pods", found, len(cases))
}

func indexOf(all []*manifest.Container, c *manifest.Container) int {
	for i, x := range all {
		if x == c {
			return i
		}
	}
	return -1
}

func mapOrEmpty(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}
