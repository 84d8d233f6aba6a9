package lint

import "testing"

// nativeSpec is a pod spec with restartPolicy Never, these containers and these native sidecars.
func nativeSpec(app string, natives ...string) string {
	s := `{restartPolicy: Never, containers: [` + app + `], initContainers: [`
	for i, n := range natives {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s + `]}`
}

const (
	fluentBit      = `{name: fluent-bit, image: fluent/fluent-bit:3.2, restartPolicy: Always}`
	fluentBitProbe = `{name: fluent-bit, image: fluent/fluent-bit:3.2, restartPolicy: Always, startupProbe: {tcpSocket: {port: 2020}}}`
	istioNative    = `{name: istio-proxy, image: docker.io/istio/proxyv2:1.27.0, restartPolicy: Always}`
	istioInit      = `{name: istio-init, image: docker.io/istio/proxyv2:1.27.0}`
)

// TestNativeSidecars is rule 5 and the infos of rule 8.
func TestNativeSidecars(t *testing.T) {
	runCases(t, []lintCase{
		{"native without a startup probe", job(noAnn, nativeSpec(app, fluentBit)), []short{warningOf(RuleNoStartupProbe, "fluent-bit")}},
		{"native with a startup probe: info only", job(noAnn, nativeSpec(app, fluentBitProbe)), []short{nativeOnly}},
		{"unknown native, app wrapped: sidesync cannot wait for what it does not know", job(noAnn, nativeSpec(wrapped, fluentBit)),
			[]short{warningOf(RuleNoStartupProbe, "fluent-bit")}},
		{"known native, app wrapped: sidesync waits for it", job(noAnn, nativeSpec(wrapped, istioNative)), nil},
		{"known native, app wrapped with --no-wait", job(noAnn, nativeSpec(
			`{name: job, image: x, command: [sidesync, --no-wait, "--", run]}`, istioNative)), []short{warningOf(RuleNoStartupProbe, "istio-proxy")}},
		{"known native, app not wrapped", job(noAnn, nativeSpec(app, istioNative)), []short{warningOf(RuleNoStartupProbe, "istio-proxy")}},
		{"a plain init container is no sidecar", job(noAnn, nativeSpec(app, istioInit)), []short{noSidecar}},
		{"long-running Pod: Kubernetes does not wait either", podYAML(noAnn, `{containers: [`+app+`], initContainers: [`+fluentBit+`]}`),
			[]short{warningOf(RuleNoStartupProbe, "fluent-bit")}},
		{"every sidecar native with a startup probe", job(noAnn, nativeSpec(wrapped, fluentBitProbe,
			`{name: istio-proxy, image: istio/proxyv2, restartPolicy: Always, startupProbe: {httpGet: {path: /healthz/ready, port: 15021}}}`)),
			[]short{nativeOnly}},
		{"native with probes and a classic one: no info", job(noAnn, `{restartPolicy: Never, containers: [`+wrapped+`, `+istioProxy+`], initContainers: [`+fluentBitProbe+`]}`), nil},
		{"no sidecar", job(noAnn, containers(app)), []short{noSidecar}},
		{"no sidecar, long-running Pod", podYAML(noAnn, `{containers: [`+app+`]}`), []short{noSidecar}},
		{"no sidecar, wrapped", job(noAnn, containers(wrapped)), []short{noSidecar}},
	})
}

// TestPodFailurePolicy is rule 6: onExitCodes without containerName also sees the sidecars.
func TestPodFailurePolicy(t *testing.T) {
	rule := func(on string) string {
		return `podFailurePolicy: {rules: [{action: FailJob, onExitCodes: ` + on + `}, {action: Ignore, onPodConditions: [{type: DisruptionTarget}]}]}`
	}
	warn := warningOf(RuleFailurePolicy, "")
	runCases(t, []lintCase{
		{"In [69] without containerName, classic sidecar", jobWith(rule(`{operator: In, values: [69]}`), noAnn, containers(wrapped, istioProxy)),
			[]short{warn}},
		{"NotIn [0] without containerName, native sidecar", jobWith(rule(`{operator: NotIn, values: [0]}`), noAnn, nativeSpec(app, fluentBitProbe)),
			[]short{warn, nativeOnly}},
		{"with containerName", jobWith(rule(`{containerName: job, operator: In, values: [69]}`), noAnn, containers(wrapped, istioProxy)), nil},
		{"wrapped, sidecars injected later", jobWith(rule(`{operator: In, values: [69]}`), noAnn, containers(wrapped)), []short{warn, noSidecar}},
		{"no sidecar, not wrapped", jobWith(rule(`{operator: In, values: [42]}`), noAnn, containers(app)), []short{noSidecar}},
		{"rules on pod conditions only", jobWith(`podFailurePolicy: {rules: [{action: Ignore, onPodConditions: [{type: DisruptionTarget}]}]}`,
			noAnn, containers(wrapped, istioProxy)), nil},
	})
}
