package lint

import (
	"strings"
	"testing"
)

// TestNeverQuits is rule 1: a classic sidecar in a pod that runs to completion, and nothing to
// tell it to quit.
func TestNeverQuits(t *testing.T) {
	never := errorOf(RuleNeverQuits, "istio-proxy")
	runCases(t, []lintCase{
		{"Job, app not wrapped", job(noAnn, containers(app, istioProxy)), []short{never}},
		{"Job, app wrapped", job(noAnn, containers(wrapped, istioProxy)), nil},
		{"Job, wrapped in a path of the user's", job(noAnn, containers(
			`{name: job, image: x, command: [/usr/local/bin/sidesync, --sidecar, istio, "--", run]}`, istioProxy)), nil},
		{"Job, the app calls the quit endpoint itself", job(noAnn, containers(quitCurl, istioProxy)), nil},
		{"Job, sidesync with --quit never", job(noAnn, containers(
			`{name: job, image: x, command: [sidesync, --quit, never, "--", run]}`, istioProxy)), []short{never}},
		{"Job, sidesync with --quit=never", job(noAnn, containers(
			`{name: job, image: x, command: [sidesync, --quit=never, "--", run]}`, istioProxy)), []short{never}},
		{"Job, sidesync disabled by its variable", job(noAnn, containers(
			`{name: job, image: x, command: [sidesync, "--", run], env: [{name: SIDESYNC_DISABLED, value: "true"}]}`, istioProxy)), []short{never}},
		{"Job, SIDESYNC_DISABLED empty counts as unset", job(noAnn, containers(
			`{name: job, image: x, command: [sidesync, "--", run], env: [{name: SIDESYNC_DISABLED, value: ""}]}`, istioProxy)), nil},
		{"Job, the flag beats the variable", job(noAnn, containers(
			`{name: job, image: x, command: [sidesync, --quit=always, "--", run], env: [{name: SIDESYNC_QUIT, value: never}]}`, istioProxy)), nil},
		{"Job, sidesync disabled, its --quit-url is no call", job(noAnn, containers(
			`{name: job, image: x, command: [sidesync, --disabled, --quit-url, "http://127.0.0.1:15020/quitquitquit", "--", run]}`, istioProxy)), []short{never}},
		{"Job, sidesync wait never quits", job(noAnn, containers(
			`{name: job, image: x, command: [sidesync, wait]}`, istioProxy)), []short{never}},
		{"Job, sidesync that refuses its settings quits nothing", job(noAnn, containers(
			`{name: job, image: x, command: [sidesync, --timeout=soon, "--", run]}`, istioProxy)), []short{errorOf(RuleWrapperConfig, "job"), never}},
		{"sidesync as an argument is not a wrapper", job(noAnn, containers(
			`{name: job, image: x, command: [python], args: [sidesync]}`, istioProxy)), []short{never}},
		{"Pod, restartPolicy Never", podYAML(noAnn, containers(app, istioProxy)), []short{never}},
		{"Pod, restartPolicy OnFailure", podYAML(noAnn, `{restartPolicy: OnFailure, containers: [`+app+`, `+istioProxy+`]}`),
			[]short{never, warningOf(RuleRestartsInPlace, "job")}},
		{"long-running Pod (restartPolicy Always by default)", podYAML(noAnn, `{containers: [`+app+`, `+istioProxy+`]}`), nil},
		{"long-running Pod, restartPolicy Always", podYAML(noAnn, `{restartPolicy: Always, containers: [`+app+`, `+istioProxy+`]}`), nil},
		{"CronJob", "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly}\nspec:\n  schedule: '@daily'\n  jobTemplate:\n    spec:\n      template:\n" +
			"        spec: " + containers(app, istioProxy) + "\n", []short{never}},
	})
}

// TestAnnouncedSidecars is rule 1 for the sidecars that a pod's annotations or labels announce:
// the marks an injector leaves, and the requests for an injection.
func TestAnnouncedSidecars(t *testing.T) {
	never := errorOf(RuleNeverQuits, "istio-proxy")
	runCases(t, []lintCase{
		{"Istio injected, by its status annotation", job(`{sidecar.istio.io/status: '{"containers":["istio-proxy"]}'}`, containers(app)), []short{never}},
		{"Istio injected natively, by its status annotation", job(`{sidecar.istio.io/status: '{"initContainers":["istio-init","istio-proxy"]}'}`, containers(app)), nil},
		{"Istio asked for by label: it may be native, a warning", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: report}\nspec:\n  template:\n" +
			"    metadata: {labels: {sidecar.istio.io/inject: \"true\"}}\n    spec: " + containers(app) + "\n", []short{warningOf(RuleNeverQuits, "istio-proxy")}},
		{"Istio asked for as a classic sidecar: an error", job(`{sidecar.istio.io/inject: "true", sidecar.istio.io/nativeSidecar: "false"}`, containers(app)), []short{never}},
		{"Istio asked for, natively", job(`{sidecar.istio.io/inject: "true", sidecar.istio.io/nativeSidecar: "true"}`, containers(app)), nil},
		{"Istio asked for and already in the manifest: one finding, an error", job(`{sidecar.istio.io/inject: "true"}`, containers(app, istioProxy)), []short{never}},
		{"Dapr", job(`{dapr.io/enabled: "true"}`, containers(app)), []short{errorOf(RuleNeverQuits, "daprd")}},
		{"Dapr, native", job(`{dapr.io/enabled: "true", dapr.io/enable-native-sidecar: "true"}`, containers(app)), nil},
		{"Consul", job(`{consul.hashicorp.com/connect-inject: "true"}`, containers(app)), []short{errorOf(RuleNeverQuits, "consul-dataplane")}},
		{"Kuma in a Job: its control plane quits it", job(`{kuma.io/sidecar-injection: enabled}`, containers(app)), nil},
		{"Kuma in a bare Pod: nothing quits it, if it is classic", podYAML(`{kuma.io/sidecar-injection: enabled}`, containers(app)),
			[]short{warningOf(RuleNeverQuits, "kuma-sidecar")}},
		{"OSM by its label names the container envoy", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: report}\nspec:\n  template:\n" +
			"    metadata: {labels: {osm-proxy-uuid: abc}}\n    spec: " + containers(app, `{name: envoy, image: envoyproxy/envoy}`) + "\n",
			[]short{errorOf(RuleNeverQuits, "envoy")}},
		{"a container named envoy alone is no sidecar sidesync knows, but may never end", job(noAnn, containers(app, `{name: envoy, image: envoyproxy/envoy}`)),
			[]short{warningOf(RuleSeveralApps, "")}},
		{"App Mesh's Envoy", job(noAnn, containers(app, `{name: envoy, image: public.ecr.aws/appmesh/aws-appmesh-envoy:v1.29}`)),
			[]short{errorOf(RuleNeverQuits, "envoy")}},
	})
}

// TestLinkerd is rule 2: Linkerd's /shutdown is off unless the pod enables it.
func TestLinkerd(t *testing.T) {
	shutdown := errorOf(RuleLinkerdShutdown, "linkerd-proxy")
	maybeShutdown := warningOf(RuleLinkerdShutdown, "linkerd-proxy") // the same proxy, the same severity
	never := errorOf(RuleNeverQuits, "linkerd-proxy")
	maybeNever := warningOf(RuleNeverQuits, "linkerd-proxy") // Linkerd 2.20+ injects native sidecars
	enabled := `{linkerd.io/inject: enabled, config.linkerd.io/proxy-admin-shutdown: enabled}`
	runCases(t, []lintCase{
		{"asked for, not wrapped, shutdown off", job(`{linkerd.io/inject: enabled}`, containers(app)), []short{maybeNever, maybeShutdown}},
		{"asked for as classic, not wrapped, shutdown off", job(`{linkerd.io/inject: enabled, config.linkerd.io/proxy-enable-native-sidecar: "false"}`, containers(app)), []short{never, shutdown}},
		{"injected, the proxy's own variable says the endpoint is on", job(`{linkerd.io/proxy-version: edge-26.8.3}`, containers(wrapped,
			`{name: linkerd-proxy, image: cr.l5d.io/linkerd/proxy, env: [{name: LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED, value: "true"}]}`)), nil},
		{"injected, the proxy's own variable says the endpoint is off", job(`{linkerd.io/proxy-version: edge-26.8.3, config.linkerd.io/proxy-admin-shutdown: enabled}`, containers(wrapped,
			`{name: linkerd-proxy, image: cr.l5d.io/linkerd/proxy, env: [{name: LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED, value: "false"}]}`)), []short{shutdown}},
		{"asked for, wrapped, shutdown off", job(`{linkerd.io/inject: enabled}`, containers(wrapped)), []short{maybeShutdown}},
		{"asked for, wrapped, shutdown enabled", job(enabled, containers(wrapped)), nil},
		{"asked for, not wrapped, shutdown enabled", job(enabled, containers(app)), []short{maybeNever}},
		{"linkerd-await --shutdown quits it", job(enabled, containers(
			`{name: job, image: x, command: [linkerd-await, --shutdown, "--", run]}`)), nil},
		{"native (alpha annotation)", job(`{linkerd.io/inject: enabled, config.alpha.linkerd.io/proxy-enable-native-sidecar: "true"}`, containers(app)), nil},
		{"native (beta annotation)", job(`{linkerd.io/inject: enabled, config.beta.linkerd.io/proxy-enable-native-sidecar: "true"}`, containers(wrapped)), nil},
		{"injected: the proxy-version mark and the container", job(`{linkerd.io/proxy-version: edge-26.8.3}`,
			containers(wrapped, `{name: linkerd-proxy, image: cr.l5d.io/linkerd/proxy:edge-26.8.3}`)), []short{shutdown}},
		{"the container alone", job(noAnn, containers(wrapped, `{name: linkerd-proxy, image: cr.l5d.io/linkerd/proxy}`)), []short{shutdown}},
		{"injected natively, as in a Pod read back", job(`{linkerd.io/proxy-version: edge-26.8.3}`, `{restartPolicy: Never, containers: [`+wrapped+`], `+
			`initContainers: [{name: linkerd-proxy, image: cr.l5d.io/linkerd/proxy, restartPolicy: Always, startupProbe: {httpGet: {path: /ready, port: 4191}}}]}`),
			[]short{nativeOnly}},
		{"long-running Pod", podYAML(`{linkerd.io/inject: enabled}`, `{containers: [`+app+`]}`), nil},
	})
}

// TestCloudSQL is rule 3: the proxy's quit endpoint and health checks exist only with flags.
func TestCloudSQL(t *testing.T) {
	quit := errorOf(RuleCloudSQLQuit, "cloud-sql-proxy")
	health := warningOf(RuleCloudSQLHealth, "cloud-sql-proxy")
	proxy := func(extra string) string {
		return `{name: cloud-sql-proxy, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.1` + extra + `}`
	}
	runCases(t, []lintCase{
		{"no flags, wrapped", job(noAnn, containers(wrapped, proxy(`, args: [my:project:db]`))), []short{quit, health}},
		{"no flags, not wrapped", job(noAnn, containers(app, proxy(``))),
			[]short{errorOf(RuleNeverQuits, "cloud-sql-proxy"), quit, health}},
		{"both flags in args", job(noAnn, containers(wrapped, proxy(`, args: [--quitquitquit, --health-check, my:project:db]`))), nil},
		{"both flags in the command, one dash", job(noAnn, containers(wrapped, proxy(`, command: [/cloud-sql-proxy, -quitquitquit, -health-check]`))), nil},
		{"flags with values", job(noAnn, containers(wrapped, proxy(`, args: [--quitquitquit=true, --health-check=true, --admin-port, "9192"]`))), nil},
		{"--quitquitquit=false counts as absent", job(noAnn, containers(wrapped, proxy(`, args: [--quitquitquit=false, --health-check]`))), []short{quit}},
		{"--health-check=false counts as absent", job(noAnn, containers(wrapped, proxy(`, args: [--quitquitquit, --health-check=false]`))), []short{health}},
		// The proxy reads each flag from a CSQL_PROXY_ variable too, as its own examples and its
		// operator configure it.
		{"both switched on by variables", job(noAnn, containers(wrapped, proxy(`, env: [{name: CSQL_PROXY_QUITQUITQUIT, value: "true"}, {name: CSQL_PROXY_HEALTH_CHECK, value: "true"}, {name: CSQL_PROXY_ADMIN_PORT, value: "9192"}]`))), nil},
		{"a variable set to false counts as absent", job(noAnn, containers(wrapped, proxy(`, args: [--health-check], env: [{name: CSQL_PROXY_QUITQUITQUIT, value: "false"}]`))), []short{quit}},
		{"the flag beats its variable", job(noAnn, containers(wrapped, proxy(`, args: [--quitquitquit=false, --health-check], env: [{name: CSQL_PROXY_QUITQUITQUIT, value: "true"}]`))), []short{quit}},
		{"variables from a ConfigMap: warnings to make sure", job(noAnn, containers(wrapped, proxy(`, env: [{name: CSQL_PROXY_QUITQUITQUIT, valueFrom: {configMapKeyRef: {name: c, key: q}}}, {name: CSQL_PROXY_HEALTH_CHECK, valueFrom: {secretKeyRef: {name: s, key: h}}}]`))),
			[]short{warningOf(RuleCloudSQLQuit, "cloud-sql-proxy"), health}},
		{"older image name", job(noAnn, containers(wrapped, `{name: proxy, image: gcr.io/cloudsql-docker/cloudsql-proxy:1.33}`)),
			[]short{errorOf(RuleCloudSQLQuit, "proxy"), warningOf(RuleCloudSQLHealth, "proxy")}},
		{"v1 image, never wrapped", job(noAnn, containers(app, `{name: proxy, image: gcr.io/cloudsql-docker/gce-proxy:1.37.0, command: [/cloud_sql_proxy, -instances=p:r:db=tcp:5432]}`)),
			[]short{errorOf(RuleNeverQuits, "proxy"), errorOf(RuleCloudSQLQuit, "proxy"), warningOf(RuleCloudSQLHealth, "proxy")}},
		{"native with a startup probe", job(noAnn, `{restartPolicy: Never, containers: [`+app+`], initContainers: [`+
			proxy(`, restartPolicy: Always, args: [--health-check], startupProbe: {httpGet: {path: /startup, port: 9090}}`)+`]}`), []short{nativeOnly}},
		{"native without a startup probe nor --health-check", job(noAnn, `{restartPolicy: Never, containers: [`+wrapped+`], initContainers: [`+
			proxy(`, restartPolicy: Always`)+`]}`), []short{warningOf(RuleNoStartupProbe, "cloud-sql-proxy")}},
		{"long-running Pod", podYAML(noAnn, `{containers: [`+app+`, `+proxy(``)+`]}`), nil},
	})
}

// TestCloudSQLv1Fix: the v1 proxy has no quit endpoint at all, so the fix for a v1 proxy that
// nothing tells to quit is to move to v2 or make it native, never to wrap the apps, which could
// not quit it either.
func TestCloudSQLv1Fix(t *testing.T) {
	fs := lintOne(t, job(noAnn, containers(app, `{name: proxy, image: gcr.io/cloudsql-docker/gce-proxy:1.37.0, command: [/cloud_sql_proxy, -instances=p:r:db=tcp:5432]}`)))
	for _, f := range fs {
		if f.Rule != RuleNeverQuits {
			continue
		}
		if strings.Contains(f.Fix, "wrap the apps") || !strings.Contains(f.Fix, "move to v2") || !strings.Contains(f.Fix, "native sidecar") {
			t.Errorf("the fix for a v1 proxy that never quits: %q", f.Fix)
		}
		return
	}
	t.Errorf("no %s finding:\n%s", RuleNeverQuits, lines(fs))
}

// TestVault is rule 4: Vault Agent's quit API is off unless the pod enables it.
func TestVault(t *testing.T) {
	off := errorOf(RuleVaultQuit, "vault-agent")
	runCases(t, []lintCase{
		{"asked for, wrapped", job(`{vault.hashicorp.com/agent-inject: "true"}`, containers(wrapped)), []short{off}},
		{"asked for, not wrapped", job(`{vault.hashicorp.com/agent-inject: "true"}`, containers(app)),
			[]short{errorOf(RuleNeverQuits, "vault-agent"), off}},
		{"pre-populate only: no sidecar", job(`{vault.hashicorp.com/agent-inject: "true", vault.hashicorp.com/agent-pre-populate-only: "true"}`,
			containers(app)), []short{noSidecar}},
		{"quit enabled, wrapped", job(`{vault.hashicorp.com/agent-inject: "true", vault.hashicorp.com/agent-enable-quit: "true"}`, containers(wrapped)), nil},
		{"injected: the status mark", job(`{vault.hashicorp.com/agent-inject-status: injected}`, containers(wrapped)), []short{off}},
		{"not asked for", job(`{vault.hashicorp.com/agent-inject: "false"}`, containers(app)), []short{noSidecar}},
	})
}
