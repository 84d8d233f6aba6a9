package lint

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sidesync/sidesync/internal/cluster/stream"
	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// helmJob is a Helm chart's migration Job written for a namespace that asks for Istio: its pod
// configures Istio's proxy and asks for nothing.
const helmJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: release-migrate
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
spec:
  backoffLimit: 1
  template:
    metadata:
      annotations:
        proxy.istio.io/config: '{"holdApplicationUntilProxyStarts": true}'
    spec:
      restartPolicy: Never
      containers:
      - name: migrate
        image: example/app:1.0
        command: [./migrate, up]
`

// TestFromNamespace: an annotation that only a mesh's injector reads says that the pod expects
// the mesh's sidecar from its namespace: never "no sidecar, not needed".
func TestFromNamespace(t *testing.T) {
	expects := func(container string) short { return warningOf(RuleFromNamespace, container) }
	runCases(t, []lintCase{
		{"Istio's proxy configured", helmJob, []short{expects("istio-proxy")}},
		{"Istio's proxy configured, the app wrapped", strings.Replace(helmJob, "command: [./migrate, up]", `command: [sidesync, "--", ./migrate, up]`, 1),
			[]short{{Info, RuleFromNamespace, "istio-proxy"}}},
		{"Istio's proxy configured, but the pod opts out", strings.Replace(helmJob, "proxy.istio.io/config:", "sidecar.istio.io/inject: \"false\"\n        proxy.istio.io/config:", 1),
			[]short{noSidecar}},
		{"Istio's proxy configured and asked for: the request speaks", strings.Replace(helmJob, "proxy.istio.io/config:", "sidecar.istio.io/inject: \"true\"\n        proxy.istio.io/config:", 1),
			[]short{warningOf(RuleNeverQuits, "istio-proxy")}},
		{"Linkerd's proxy configured", job(`{config.linkerd.io/proxy-cpu-request: 100m}`, containers(app)), []short{expects("linkerd-proxy")}},
		{"Linkerd's inject disabled", job(`{linkerd.io/inject: disabled, config.linkerd.io/proxy-cpu-request: 100m}`, containers(app)), []short{noSidecar}},
		{"another's annotation", job(`{example.com/sidecar.istio.io: x}`, containers(app)), []short{noSidecar}},
		{"a long-running Pod: an info", podYAML(`{traffic.sidecar.istio.io/excludeOutboundPorts: "5432"}`, `{containers: [`+app+`]}`),
			[]short{{Info, RuleFromNamespace, "istio-proxy"}}},
	})
	fs := lintOne(t, helmJob)
	if got := fs[0].String(); !strings.Contains(got, "proxy.istio.io/config") || !strings.Contains(got, "namespace") || !strings.Contains(got, "sidecar.istio.io/inject") {
		t.Errorf("finding = %q; want it to name the annotation, the namespace and the request", got)
	}
}

// TestIstioStatusPortZero: status.sidecar.istio.io/port "0" starts no status server, so the
// agent has no quit and Envoy's readiness nothing to ask: nothing can tell the proxy to quit,
// wrapped or not.
func TestIstioStatusPortZero(t *testing.T) {
	off := errorOf(RuleEndpointsOff, "istio-proxy")
	runCases(t, []lintCase{
		{"injected, wrapped", job(`{sidecar.istio.io/status: "{}", status.sidecar.istio.io/port: "0"}`, containers(wrapped, istioProxy)), []short{off}},
		{"injected, not wrapped: one finding", job(`{sidecar.istio.io/status: "{}", status.sidecar.istio.io/port: "0"}`, containers(app, istioProxy)), []short{off}},
		{"asked for: it may be native, a warning", job(`{sidecar.istio.io/inject: "true", status.sidecar.istio.io/port: "0"}`, containers(wrapped)),
			[]short{warningOf(RuleEndpointsOff, "istio-proxy")}},
		{"another port", job(`{sidecar.istio.io/status: "{}", status.sidecar.istio.io/port: "15030"}`, containers(wrapped, istioProxy)), nil},
	})
}

// TestInNamespace: a namespace that asks for a mesh (the catalog's first namespace request)
// gives a plain Job the mesh's sidecar, and the finding says the namespace asked; a pod that
// opts out, or a namespace that asks for nothing, leaves the object as it is.
func TestInNamespace(t *testing.T) {
	for _, name := range []string{"istio", "linkerd"} {
		e, ok := catalog.Lookup(name)
		if !ok || len(e.NamespaceRequests) == 0 || len(e.Unless) == 0 {
			t.Fatalf("catalog: %s has no namespace request or opt-out", name)
		}
		asks := e.NamespaceRequests[0]
		nsAnn, nsLabels := map[string]string{}, map[string]string{}
		if asks.Label {
			nsLabels[asks.Key] = asks.Value
		} else {
			nsAnn[asks.Key] = asks.Value
		}
		optOut := e.Unless[0]
		optOutYAML := `{annotations: {` + optOut.YAML() + `}}`
		if optOut.Label {
			optOutYAML = `{labels: {` + optOut.YAML() + `}}`
		}
		for _, tc := range []struct {
			name           string
			manifest       string
			nsAnn, nsLabel map[string]string
			added          bool
		}{
			{"asked", job(noAnn, containers(app)), nsAnn, nsLabels, true},
			{"the pod opts out", strings.Replace(job(noAnn, containers(app)), "{annotations: {}}", optOutYAML, 1), nsAnn, nsLabels, false},
			{"nothing asked", job(noAnn, containers(app)), nil, nil, false},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				obj := decodeOne(t, tc.manifest)
				before := decodeOne(t, tc.manifest)
				tm := manifest.TypeMeta{}
				got, from := InNamespace(obj, tm, tc.nsAnn, tc.nsLabel)
				if diff := cmp.Diff(before, obj); diff != "" {
					t.Errorf("InNamespace changed its argument (-before +after):\n%s", diff)
				}
				w, err := manifest.Locate(got, tm)
				if err != nil {
					t.Fatal(err)
				}
				o, err := FromWorkload(w)
				if err != nil {
					t.Fatal(err)
				}
				o.FromNamespace = from
				fs := Lint(o)
				if !tc.added {
					if from != nil || !cmp.Equal(shorten(fs), []short{noSidecar}) {
						t.Errorf("from = %v, findings:\n%s; want nothing from the namespace, no sidecar", from, lines(fs))
					}
					return
				}
				if want := map[string]string{e.Name: asks.String()}; !cmp.Equal(from, want) {
					t.Errorf("from = %v, want %v", from, want)
				}
				if len(fs) == 0 || fs[0].Rule != RuleNeverQuits && fs[0].Rule != RuleLinkerdShutdown || fs[0].Container != e.Container {
					t.Fatalf("findings:\n%s; want first that %s never quits", lines(fs), e.Container)
				}
				if want := "from the namespace's " + asks.String(); !strings.Contains(fs[0].Message, want) {
					t.Errorf("finding %q; want it to say %q", fs[0].Message, want)
				}
			})
		}
	}
}

// decodeOne is the one object of a manifest, as decoded JSON.
func decodeOne(t *testing.T, m string) map[string]any {
	t.Helper()
	docs, _, err := stream.Read(strings.NewReader(m))
	if err != nil || len(docs) != 1 {
		t.Fatalf("stream.Read = %d documents, %v", len(docs), err)
	}
	return docs[0].Object
}

// TestFindingNamespace: a finding of an object read from a cluster names its namespace as
// kubectl takes it; one of a manifest does not.
func TestFindingNamespace(t *testing.T) {
	objs, err := Decode([]byte(job(noAnn, containers(app, istioProxy))))
	if err != nil {
		t.Fatal(err)
	}
	o := objs[0]
	offline := Lint(o)
	o.Namespace = "team-a"
	live := Lint(o)
	if len(live) == 0 || len(live) != len(offline) {
		t.Fatalf("findings: %d in a namespace, %d offline", len(live), len(offline))
	}
	for i := range live {
		if want := strings.Replace(offline[i].String(), "Job/report: ", "Job/report -n team-a: ", 1); live[i].String() != want {
			t.Errorf("String() = %q\nwant %q", live[i].String(), want)
		}
		if offline[i].Namespace != "" || live[i].Namespace != "team-a" {
			t.Errorf("Namespace = %q offline, %q in team-a", offline[i].Namespace, live[i].Namespace)
		}
	}
}
