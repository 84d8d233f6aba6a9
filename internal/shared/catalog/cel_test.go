package catalog_test

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/testing/celeval"
)

// The differential test of the catalog's two renderings: every predicate's Go and its CEL,
// evaluated as the API server evaluates it (internal/testing/celeval), must agree on every pod
// and container of the corpus, the examples, inject's testdata and the synthetic pods below,
// which reach the branches the real ones do not.

// celPod is how the policies bind the pod's annotations and labels.
var celPod = catalog.CELPod{Annotations: "variables.ann", Labels: "variables.lbl"}

// celCase is a pod to evaluate both renderings over: as Go reads it and as CEL sees it.
type celCase = celeval.Pod

// syntheticPods reach what the real manifests do not: every way a switch, a port or a flag is
// given, each row's marks and exceptions, orchestrators' containers, native sidecars.
var syntheticPods = []string{
	// The Cloud SQL Auth Proxy: flags in every spelling, ports valid and not, "--".
	`{spec: {containers: [{name: job, image: app}, {name: db, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2, args: [--health-check, --http-port, "9190", --quitquitquit=false, --admin-port=9191, p:r:i]}]}}`,
	`{spec: {containers: [{name: job, image: app}, {name: db, image: GCR.IO/CLOUD-SQL-CONNECTORS/CLOUD-SQL-PROXY:2, command: [/cloud-sql-proxy], args: [-health-check=true, -http-port=" 9190 ", --quitquitquit=1, --admin-port, --debug, --, --http-port=1]}]}}`,
	`{spec: {containers: [{name: job, image: app}, {name: db, image: cloud-sql-proxy, args: [--health-check=false, --http-port, "0", --quitquitquit=T, --admin-port, "65536"]}]}}`,
	`{spec: {containers: [{name: job, image: app}, {name: db, image: cloud-sql-proxy, args: [--http-port=+9190, --admin-port=x, --quitquitquit-not, --health-check=yes]}]}}`,
	`{spec: {containers: [{name: job, image: app}, {name: db, image: cloud-sql-proxy, args: [--http-port, "00009190", --admin-port=-5, --, --quitquitquit]}]}}`,
	`{spec: {containers: [{name: job, image: app}, {name: db, image: cloud-sql-proxy, args: [--http-port=000000009190, --admin-port=99999999999999999999]}]}}`,
	`{spec: {containers: [{name: job, image: app}, {name: db, image: cloud-sql-proxy, env: [{name: CSQL_PROXY_HEALTH_CHECK, value: "true"}, {name: CSQL_PROXY_QUITQUITQUIT, value: "false"}, {name: CSQL_PROXY_HTTP_PORT, value: "9190"}, {name: CSQL_PROXY_ADMIN_PORT, valueFrom: {configMapKeyRef: {name: c, key: k}}}]}]}}`,
	`{spec: {containers: [{name: job, image: app}, {name: db, image: cloud-sql-proxy, env: [{name: CSQL_PROXY_HEALTH_CHECK, valueFrom: {secretKeyRef: {name: s, key: k}}}, {name: CSQL_PROXY_QUITQUITQUIT, value: ""}, {name: CSQL_PROXY_QUITQUITQUIT, value: "true"}, {name: CSQL_PROXY_HTTP_PORT, value: "nine"}]}]}}`,
	`{spec: {containers: [{name: job, image: app}, {name: db, image: cloud-sql-proxy, args: [--quitquitquit], env: [{name: CSQL_PROXY_QUITQUITQUIT, value: "false"}, {name: CSQL_PROXY_HEALTH_CHECK, value: "1"}, {name: CSQL_PROXY_ADMIN_PORT, value: "9192"}]}]}}`,
	`{spec: {containers: [{name: job, image: app}, {name: db, image: gcr.io/cloudsql-docker/gce-proxy:1.33, command: [/cloud_sql_proxy, --health-check, --quitquitquit]}]}}`,
	`{spec: {initContainers: [{name: db, image: cloud-sql-proxy, restartPolicy: Always, args: [--health-check, --quitquitquit], startupProbe: {httpGet: {path: /startup, port: 9090}}}, {name: migrate, image: m, restartPolicy: Never}], containers: [{name: job, image: app}]}}`,
	// Linkerd: the annotation, the proxy's variable, the port, the exceptions.
	`{metadata: {annotations: {linkerd.io/inject: enabled, config.linkerd.io/proxy-admin-shutdown: enabled, config.linkerd.io/admin-port: "4192"}}, spec: {containers: [{name: job, image: app}]}}`,
	`{metadata: {annotations: {linkerd.io/proxy-version: edge-26.8.3, config.linkerd.io/proxy-admin-shutdown: disabled, config.linkerd.io/admin-port: bad}}, spec: {containers: [{name: job, image: app}, {name: linkerd-proxy, image: cr.l5d.io/linkerd/proxy, env: [{name: LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED, value: "true"}]}]}}`,
	`{metadata: {annotations: {linkerd.io/proxy-version: edge-26.8.3, config.linkerd.io/proxy-admin-shutdown: enabled}}, spec: {containers: [{name: job, image: app}, {name: linkerd-proxy, image: cr.l5d.io/linkerd/proxy, env: [{name: LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED, value: "false"}]}]}}`,
	`{metadata: {annotations: {linkerd.io/proxy-version: edge-26.8.3}}, spec: {containers: [{name: job, image: app}, {name: linkerd-proxy, image: cr.l5d.io/linkerd/proxy, env: [{name: LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]}]}}`,
	`{metadata: {annotations: {linkerd.io/inject: disabled, linkerd.io/proxy-version: x}}, spec: {containers: [{name: job, image: app}, {name: linkerd-proxy, image: cr.l5d.io/linkerd/proxy}]}}`,
	`{metadata: {annotations: {linkerd.io/proxy-version: x, config.beta.linkerd.io/proxy-enable-native-sidecar: "true"}}, spec: {initContainers: [{name: linkerd-proxy, image: cr.l5d.io/linkerd/proxy, restartPolicy: Always}], containers: [{name: job, image: app}]}}`,
	// Istio: its status, its opt-out in a label and an annotation, requests without the proxy.
	`{metadata: {annotations: {sidecar.istio.io/status: '{"initContainers":["istio-proxy"]}', status.sidecar.istio.io/port: "15021"}}, spec: {initContainers: [{name: istio-proxy, image: istio/proxyv2, restartPolicy: Always, startupProbe: {httpGet: {port: 15021}}}], containers: [{name: job, image: app}]}}`,
	`{metadata: {annotations: {sidecar.istio.io/status: "{}"}, labels: {sidecar.istio.io/inject: "false"}}, spec: {containers: [{name: job, image: app}, {name: istio-proxy, image: istio/proxyv2}]}}`,
	// Istio's status port 0: no status server, so neither endpoint.
	`{metadata: {annotations: {sidecar.istio.io/status: "{}", status.sidecar.istio.io/port: "0"}}, spec: {containers: [{name: job, image: app}, {name: istio-proxy, image: istio/proxyv2}]}}`,
	`{metadata: {annotations: {sidecar.istio.io/inject: "true", status.sidecar.istio.io/port: " 0"}}, spec: {containers: [{name: job, image: app}]}}`,
	`{metadata: {annotations: {sidecar.istio.io/inject: "false", sidecar.istio.io/status: "{}"}}, spec: {containers: [{name: job, image: app}]}}`,
	`{metadata: {labels: {sidecar.istio.io/inject: "true", istio-injection: enabled, istio.io/rev: canary}}, spec: {containers: [{name: job, image: app}]}}`,
	// OSM's envoy, App Mesh's envoy, an Envoy of nobody's.
	`{metadata: {labels: {osm-proxy-uuid: "1"}}, spec: {containers: [{name: job, image: app}, {name: envoy, image: openservicemesh/envoy}]}}`,
	`{spec: {containers: [{name: job, image: app}, {name: envoy, image: 840364872350.dkr.ecr.us-west-2.amazonaws.com/aws-AppMesh-envoy:v1.29}]}}`,
	`{metadata: {annotations: {openservicemesh.io/sidecar-injection: enabled}}, spec: {containers: [{name: job, image: app}, {name: envoy, image: envoyproxy/envoy}]}}`,
	// Vault, Consul, Kuma, Dapr: marks, requests, exceptions, ports.
	`{metadata: {annotations: {vault.hashicorp.com/agent-inject-status: injected, vault.hashicorp.com/agent-enable-quit: "true", vault.hashicorp.com/agent-cache-listener-port: "8201"}}, spec: {containers: [{name: job, image: app}, {name: vault-agent, image: hashicorp/vault}]}}`,
	`{metadata: {annotations: {vault.hashicorp.com/agent-inject: "true", vault.hashicorp.com/agent-enable-quit: "false"}}, spec: {containers: [{name: job, image: app}]}}`,
	`{metadata: {annotations: {vault.hashicorp.com/agent-inject: "true", vault.hashicorp.com/agent-pre-populate-only: "true"}}, spec: {containers: [{name: job, image: app}, {name: vault-agent, image: hashicorp/vault}]}}`,
	`{metadata: {annotations: {consul.hashicorp.com/connect-inject-status: injected, consul.hashicorp.com/sidecar-proxy-lifecycle-graceful-port: "20601"}}, spec: {containers: [{name: job, image: app}, {name: consul-dataplane, image: hashicorp/consul-dataplane}]}}`,
	`{metadata: {annotations: {kuma.io/sidecar-injected: "true", kuma.io/envoy-admin-port: "9902"}, labels: {kuma.io/sidecar-injection: enabled}}, spec: {containers: [{name: job, image: app}, {name: kuma-sidecar, image: kumahq/kuma-dp}]}}`,
	`{metadata: {annotations: {dapr.io/enabled: "true", dapr.io/http-port: "3501", dapr.io/enable-native-sidecar: "true"}}, spec: {containers: [{name: job, image: app}, {name: daprd, image: daprio/daprd}]}}`,
	`{metadata: {annotations: {dapr.io/enabled: "false"}}, spec: {containers: [{name: job, image: app}, {name: daprd, image: daprio/daprd}]}}`,
	// Orchestrators' containers, and names that nearly match.
	`{metadata: {labels: {tekton.dev/taskRun: run-1}}, spec: {containers: [{name: step-build, image: app}, {name: sidecar-db, image: postgres}, {name: sidecarx, image: x}]}}`,
	`{spec: {containers: [{name: step-build, image: app}, {name: sidecar-db, image: postgres}]}}`,
	`{spec: {containers: [{name: base, image: airflow}, {name: airflow-xcom-sidecar, image: alpine}, {name: gke-gcsfuse-sidecar, image: gke}]}}`,
	// Native sidecars nobody knows, with and without probes.
	`{spec: {initContainers: [{name: proxy, image: some/proxy, restartPolicy: Always, startupProbe: {tcpSocket: {port: 1}}}, {name: other, image: x, restartPolicy: OnFailure}], containers: [{name: job, image: app}]}}`,
	// Native sidecars with startup probes beside what makes NativeOnly false: a native one without
	// a probe, a regular sidecar, a sidecar announced and not in the pod yet, an empty probe.
	`{spec: {initContainers: [{name: proxy, image: some/proxy, restartPolicy: Always, startupProbe: {tcpSocket: {port: 1}}}, {name: bare, image: some/proxy, restartPolicy: Always}], containers: [{name: job, image: app}]}}`,
	`{spec: {initContainers: [{name: proxy, image: some/proxy, restartPolicy: Always, startupProbe: {tcpSocket: {port: 1}}}], containers: [{name: job, image: app}, {name: db, image: cloud-sql-proxy}]}}`,
	`{metadata: {annotations: {vault.hashicorp.com/agent-inject: "true"}}, spec: {initContainers: [{name: proxy, image: some/proxy, restartPolicy: Always, startupProbe: {tcpSocket: {port: 1}}}], containers: [{name: job, image: app}]}}`,
	`{spec: {initContainers: [{name: proxy, image: some/proxy, restartPolicy: Always, startupProbe: {}}, {name: migrate, image: m}], containers: [{name: job, image: app}, {name: step-x, image: app}]}}`,
}

// celCases are the pods of celeval.Pods and the synthetic ones.
func celCases(t *testing.T) []celCase { return celeval.WithSynthetic(t, syntheticPods) }

// differ reports one disagreement: what, where, both answers and the CEL.
func differ(t *testing.T, c celCase, what string, goVal, celVal any, expr string) {
	t.Helper()
	if len(expr) > 600 {
		expr = expr[:600] + "..."
	}
	t.Errorf("%s: %s: Go says %v, CEL says %v\nCEL: %s", c.Name, what, goVal, celVal, expr)
}

// evalAt evaluates expr with c bound to the pod's i'th container, by a comprehension over a
// one-element list: the way the policies bind a container.
func evalAt(t *testing.T, c celCase, i int, expr string) any {
	t.Helper()
	vars := c.Vars()
	vars["container"] = c.Container(i)
	v, err := celeval.For(t).Eval("[variables.container].map(c, "+expr+")[0]", c.Object, vars)
	if err != nil {
		t.Fatalf("%s, container %s: %v", c.Name, c.View.All()[i].Name, err)
	}
	return v
}

// TestCELMarksAndMatches: Mark.On and Match.Matches against their CEL, for every mark and match
// of every row, on every pod and container.
func TestCELMarksAndMatches(t *testing.T) {
	e := celeval.For(t)
	for _, c := range celCases(t) {
		for _, row := range catalog.Entries() {
			for _, m := range rowMarks(row) {
				got, err := e.Bool(m.CEL(celPod), c.Object, c.Vars())
				if err != nil {
					t.Fatal(err)
				}
				if want := m.On(c.View.Annotations, c.View.Labels); got != want {
					differ(t, c, row.Name+" "+m.String(), want, got, m.CEL(celPod))
				}
			}
			for _, m := range rowMatches(row) {
				for i, k := range c.View.All() {
					if want, got := m.Matches(c.View, k), evalAt(t, c, i, m.CEL(celPod, "c")); got != want {
						differ(t, c, fmt.Sprintf("%s's match %+v on container %s", row.Name, m, k.Name), want, got, m.CEL(celPod, "c"))
					}
				}
			}
		}
	}
}

// rowMarks are every mark a row holds.
func rowMarks(e catalog.Entry) []catalog.Mark {
	out := append(append(append(append(append([]catalog.Mark{}, e.Marks...), e.Requests...), e.Unless...), e.NamespaceRequests...), e.Native.Marks...)
	out = append(out, e.Native.ClassicMarks...)
	for _, m := range rowMatches(e) {
		if m.When != nil {
			out = append(out, *m.When)
		}
	}
	return out
}

// rowMatches are every match a row holds.
func rowMatches(e catalog.Entry) []catalog.Match {
	out := append([]catalog.Match{}, e.Containers...)
	for _, sw := range []*catalog.Switch{e.ReadySwitch, e.QuitSwitch} {
		if sw != nil {
			out = append(out, sw.Unavailable...)
		}
	}
	return out
}

// rowSources are every source a row reads.
func rowSources(e catalog.Entry) []catalog.Source {
	out := append(append([]catalog.Source{}, e.ReadyPort...), e.QuitPort...)
	for _, sw := range []*catalog.Switch{e.ReadySwitch, e.QuitSwitch} {
		if sw != nil {
			out = append(out, sw.On...)
		}
	}
	return out
}

// TestCELFlagsAndSources: FlagValue, the reading of a source (value, set, hidden) and what
// switches it on, against their CEL, for every source of every row (boolean or not, a port or
// not) on every container.
func TestCELFlagsAndSources(t *testing.T) {
	for _, c := range celCases(t) {
		for i, k := range c.View.All() {
			for _, row := range catalog.Entries() {
				for _, src := range rowSources(row) {
					for _, port := range []bool{false, true} {
						checkSource(t, c, i, k, src, port)
					}
				}
			}
		}
	}
}

func checkSource(t *testing.T, c celCase, i int, k *manifest.Container, src catalog.Source, port bool) {
	t.Helper()
	where := fmt.Sprintf("%s (port %v) on container %s", src, port, k.Name)
	if src.Flag != "" {
		for _, boolean := range []bool{false, true} {
			val, set := catalog.FlagValue(k.Argv(), src.Flag, boolean)
			setCEL, valCEL := catalog.FlagValueCEL("c", src.Flag, boolean)
			if got := evalAt(t, c, i, setCEL); got != set {
				differ(t, c, fmt.Sprintf("FlagValue(%q, %s, %v) set", k.Argv(), src.Flag, boolean), set, got, setCEL)
				continue
			}
			if !set {
				continue // the value is read only where the flag is set
			}
			if got := evalAt(t, c, i, valCEL); got != val {
				differ(t, c, fmt.Sprintf("FlagValue(%q, %s, %v) value", k.Argv(), src.Flag, boolean), val, got, valCEL)
			}
		}
	}
	val, set, hidden := catalog.SourceValue(c.View, k, src, port)
	setCEL, valCEL, hiddenCEL := catalog.SourceValueCEL(celPod, "c", src, port)
	if got := evalAt(t, c, i, setCEL); got != set {
		differ(t, c, where+": set", set, got, setCEL)
	}
	if got := evalAt(t, c, i, hiddenCEL); got != hidden {
		differ(t, c, where+": hidden", hidden, got, hiddenCEL)
	}
	if !set {
		return
	}
	if got := evalAt(t, c, i, valCEL); got != val {
		differ(t, c, where+": value", val, got, valCEL)
	}
	on := catalog.SourceOnCEL(src, valCEL)
	if got, want := evalAt(t, c, i, on), catalog.SourceOn(src, val); got != want {
		differ(t, c, where+": on", want, got, on)
	}
}

// TestCELSourceOn: what switches a source on, for every value strconv.ParseBool knows and some it
// does not, against its CEL.
func TestCELSourceOn(t *testing.T) {
	e := celeval.For(t)
	values := []string{"", "1", "0", "t", "f", "T", "F", "true", "false", "TRUE", "FALSE", "True", "False", "yes", "enabled", "disabled", " true", "tRue"}
	for _, row := range catalog.Entries() {
		for _, src := range rowSources(row) {
			for _, v := range values {
				expr := catalog.SourceOnCEL(src, strconv.Quote(v))
				got, err := e.Bool(expr, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if want := catalog.SourceOn(src, v); got != want {
					t.Errorf("%s on %q: Go says %v, CEL says %v\nCEL: %s", src, v, want, got, expr)
				}
			}
		}
	}
}

// TestCELSettings: the ports a sidecar's settings give and whether its switches drop an
// endpoint, against their CEL, for every row on every container (as the row's sidecar).
func TestCELSettings(t *testing.T) {
	for _, c := range celCases(t) {
		for i, k := range c.View.All() {
			for _, row := range catalog.Entries() {
				for _, sources := range [][]catalog.Source{row.ReadyPort, row.QuitPort} {
					if len(sources) == 0 {
						continue
					}
					expr := catalog.PortCEL(sources, celPod, "c")
					if got, want := evalAt(t, c, i, expr), int64(catalog.Port(c.View, k, sources)); got != want {
						differ(t, c, fmt.Sprintf("%s's port from %v on container %s", row.Name, sources, k.Name), want, got, expr)
					}
				}
				for quit, sw := range []*catalog.Switch{row.ReadySwitch, row.QuitSwitch} {
					if sw == nil {
						continue
					}
					expr := catalog.DroppedCEL(sw, celPod, "c", quit == 1)
					if got, want := evalAt(t, c, i, expr), catalog.Dropped(c.View, k, sw, quit == 1); got != want {
						differ(t, c, fmt.Sprintf("%s's %s dropped on container %s", row.Name, sw.What, k.Name), want, got, expr)
					}
				}
			}
		}
	}
}

// TestCELSort: Sort against SortCEL on every pod: the rows announced, the row that claims each
// container (manifest.NativeCEL choosing the native sidecars among the init containers), which
// regular containers are sidecars, whether every row announced claims a container, what
// Sidecar.Profile makes of each sidecar's endpoints (EndpointCEL), and whether every sidecar is
// native with a startup probe (Pod.NativeOnly).
func TestCELSort(t *testing.T) {
	e := celeval.For(t)
	k, err := catalog.NewSortCEL(celPod)
	if err != nil {
		t.Fatal(err)
	}
	rows := catalog.Entries()
	index, byVar := map[string]int64{}, map[string]int{}
	for i, r := range rows {
		index[r.Name], byVar[catalog.AnnouncedVar(i)] = int64(i), i
	}
	for _, c := range celCases(t) {
		vars := c.Vars()
		announced := catalog.Announced(c.View)
		for _, v := range k.Variables() {
			got, err := e.Bool(v.Expression, c.Object, vars)
			if err != nil {
				t.Fatal(err)
			}
			vars[v.Name] = got
			row := rows[byVar[v.Name]]
			if want := announced[row.Name]; got != want {
				differ(t, c, row.Name+" announced", want, got, v.Expression)
			}
			delete(announced, row.Name)
		}
		for name := range announced {
			t.Errorf("%s: Sort announces %s, for which SortCEL has no variable", c.Name, name)
		}
		checkClaims(t, c, k, vars, index)
	}
}

// checkClaims compares, for each container of the pod, the row Sort gives it with Claim's, and
// the sidecars' endpoints with EndpointCEL's.
func checkClaims(t *testing.T, c celCase, k *catalog.SortCEL, vars map[string]any, index map[string]int64) {
	t.Helper()
	e := celeval.For(t)
	p := catalog.Sort(c.View, catalog.Options{Requests: true})
	want := map[*manifest.Container]int64{}
	sidecars := map[*manifest.Container]*catalog.Sidecar{}
	unclaimed := false
	for _, s := range p.Sidecars {
		switch {
		case s.Container == nil:
			unclaimed = true
		case s.Entry != nil:
			want[s.Container], sidecars[s.Container] = index[s.Entry.Name], s
		default:
			want[s.Container] = -1 // a native sidecar nobody knows, or one of an orchestrator's
		}
	}
	for _, s := range p.Stopped {
		want[s.Container] = index[s.Entry.Name]
	}
	var ents, nativeEnts, natives []any
	for i, ct := range c.View.All() {
		vars["container"] = c.Container(i)
		native, err := e.Bool("[variables.container].map(c, "+manifest.NativeCEL("c")+")[0]", c.Object, vars)
		if err != nil {
			t.Fatal(err)
		}
		if native != ct.Native() && ct.Init {
			differ(t, c, "container "+ct.Name+" native", ct.Native(), native, manifest.NativeCEL("c"))
		}
		if ct.Init && !ct.Native() {
			continue // not sorted as a sidecar
		}
		got, err := e.Int("[variables.container].map(c, "+k.Claim("c")+")[0]", c.Object, vars)
		if err != nil {
			t.Fatal(err)
		}
		w, ok := want[ct]
		if !ok {
			w = -1 // an app
		}
		if ct.Init {
			natives, nativeEnts = append(natives, c.Container(i)), append(nativeEnts, got)
			if got >= 0 && !catalog.Entries()[got].IsProfile() {
				got = -1 // Sort keeps no row for a native sidecar an orchestrator stops
			}
		}
		if got != w {
			differ(t, c, "the row that claims container "+ct.Name, w, got, k.Claim("c"))
		}
		if !ct.Init {
			ents = append(ents, got)
			isSidecar, err := e.Bool(k.Sidecar(strconv.FormatInt(got, 10)), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, want := sidecars[ct]; isSidecar != want {
				differ(t, c, "container "+ct.Name+" is a sidecar", want, isSidecar, k.Sidecar("e"))
			}
		}
		if s := sidecars[ct]; s != nil {
			checkEndpoints(t, c, i, s)
		}
	}
	vars["ent"], vars["nativeEnt"] = ents, nativeEnts
	expr := k.AnnouncedClaimed("variables.ent", "variables.nativeEnt")
	all, err := e.Bool(expr, c.Object, vars)
	if err != nil {
		t.Fatal(err)
	}
	if all == unclaimed {
		differ(t, c, "every row announced claims a container", !unclaimed, all, expr)
	}
	vars["natives"] = natives
	expr = k.NativeOnly("variables.natives", "variables.ent", "variables.nativeEnt")
	nativeOnly, err := e.Bool(expr, c.Object, vars)
	if err != nil {
		t.Fatal(err)
	}
	if want := p.NativeOnly(); nativeOnly != want {
		differ(t, c, "every sidecar is native with a startup probe", want, nativeOnly, expr)
	}
}

// checkEndpoints compares what Sort's profile has of a sidecar's endpoints with EndpointCEL, and
// whether it is native with a startup probe with ProfileCEL.
func checkEndpoints(t *testing.T, c celCase, i int, s *catalog.Sidecar) {
	t.Helper()
	sc := s.Entry.ProfileCEL(celPod, "c", s.Container.Init)
	for _, b := range []struct {
		what  string
		goVal bool
		expr  string
	}{
		{"native", s.Profile.Native, sc.Native},
		{"startup probe", s.Profile.StartupProbe, sc.StartupProbe},
	} {
		if got := evalAt(t, c, i, b.expr); got != b.goVal {
			differ(t, c, fmt.Sprintf("%s's %s (container %s)", s.Entry.Name, b.what, s.Container.Name), b.goVal, got, b.expr)
		}
	}
	type endpoint struct {
		name string
		ep   catalog.EndpointCEL
		ok   bool
		url  string // the profile's, "" when it has none
	}
	ready, readyOK := s.Entry.ReadyCEL(celPod, "c")
	quit, quitOK := s.Entry.QuitCEL(celPod, "c")
	eps := []endpoint{{name: "readiness check", ep: ready, ok: readyOK}, {name: "quit call", ep: quit, ok: quitOK}}
	if s.Profile.Ready != nil {
		eps[0].url = s.Profile.Ready.URL
	}
	if s.Profile.Quit != nil {
		eps[1].url = s.Profile.Quit.URL
	}
	for _, ep := range eps {
		if !ep.ok {
			continue
		}
		what := fmt.Sprintf("%s's %s (container %s)", s.Entry.Name, ep.name, s.Container.Name)
		if dropped := evalAt(t, c, i, ep.ep.Dropped); dropped != (ep.url == "") {
			differ(t, c, what+" dropped", ep.url == "", dropped, ep.ep.Dropped)
			continue
		}
		if ep.url == "" {
			continue
		}
		u, err := url.Parse(ep.url)
		if err != nil {
			t.Fatal(err)
		}
		port := evalAt(t, c, i, ep.ep.Port).(int64)
		if port == 0 {
			port = int64(ep.ep.Default)
		}
		if want, _ := strconv.ParseInt(u.Port(), 10, 64); port != want {
			differ(t, c, what+" port", want, port, ep.ep.Port)
		}
	}
}

// TestCELNamesProfile: NamesProfileCEL against IsProfile of a --sidecar value's name, for every
// profile and row, with and without settings, and names that are none.
func TestCELNamesProfile(t *testing.T) {
	e := celeval.For(t)
	specs := []string{"", ":", "istio:", "Istio", "istio-proxy", "xistio", "istiox:port=1", "http:ready=http://127.0.0.1:1/x,quit=none"}
	for _, row := range catalog.Entries() {
		specs = append(specs, row.Name, row.Name+":native=true", row.Name+"x", "x"+row.Name)
	}
	for _, spec := range specs {
		expr := catalog.NamesProfileCEL(strconv.Quote(spec))
		got, err := e.Bool(expr, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		name, _, _ := strings.Cut(spec, ":")
		if want := catalog.IsProfile(name); got != want {
			t.Errorf("%q: Go says %v, CEL says %v\nCEL: %s", spec, want, got, expr)
		}
	}
}
