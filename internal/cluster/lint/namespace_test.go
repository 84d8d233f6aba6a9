package lint

import (
	"strings"
	"testing"
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
