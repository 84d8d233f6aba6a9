package catalog

import (
	"slices"

	"github.com/sidesync/sidesync/internal/shared/jsonlite"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/sidecar"
)

// table is the catalog, one row per sidecar. Every value comes from the sidecar's or its
// injector's own source code or documentation; docs/SIDECARS.md gives them with their upstream
// sources (the section is named in each comment). Loopback is written 127.0.0.1 where the
// sidecar binds IPv4, and localhost where it binds "localhost" or the address is not documented:
// sidesync's client tries every address localhost stands for, IPv6 included, and never looks it
// up.
//
// The rows are literals, which the compiler lays out as data: no code builds them, in the pod
// binary or at its start. Nothing may change them: Lookup and Sort hand out shared rows, and
// Profile a copy.
//
// A new row also needs an emulator profile (internal/testing/emulator, Profiles) and a process-level
// case (cmd/sidesync, profileCases); TestProfilesComplete fails until both are there, and the
// README's tests until its tables are regenerated (go generate ./internal/shared/catalog).
var table = []Entry{
	// Any Envoy (SIDECARS.md 1): 9901 is the admin address Envoy's docs recommend.
	{Name: "envoy", Title: "Envoy",
		Sidecar: sidecar.Sidecar{Name: "envoy",
			Ready: &sidecar.Check{Kind: sidecar.EnvoyAdmin, URL: "http://127.0.0.1:9901"},
			Quit:  &sidecar.Call{URL: "http://127.0.0.1:9901/quitquitquit"}},
		Notes: "any Envoy; 9901 is Envoy's documented admin port",
		// A container named envoy may be anyone's.
		Undetectable: "a plain Envoy carries no injector's mark, and a container named envoy may be anyone's"},

	// Open Service Mesh (SIDECARS.md 2): Envoy itself, admin on 127.0.0.1:15000. Its webhook
	// labels the pods it injects with osm-proxy-uuid and adds a container named envoy.
	{Name: "osm", Title: "Open Service Mesh",
		Sidecar: sidecar.Sidecar{Name: "osm",
			Ready: &sidecar.Check{Kind: sidecar.EnvoyAdmin, URL: "http://127.0.0.1:15000"},
			Quit:  &sidecar.Call{URL: "http://127.0.0.1:15000/quitquitquit"}},
		Notes:    "Open Service Mesh (archived); the article's setup",
		Marks:    []Mark{{Key: "osm-proxy-uuid", Label: true}},
		Requests: []Mark{{Key: "openservicemesh.io/sidecar-injection", Value: "enabled"}},
		// OSM: the namespace annotation (osm namespace add --enable-sidecar-injection).
		NamespaceRequests: []Mark{{Key: "openservicemesh.io/sidecar-injection", Value: "enabled"}},
		Expects:           []string{"openservicemesh.io/"},
		Container:         "envoy",
		Native:            Native{ByDefault: Classic}},

	// Istio (SIDECARS.md 3): readiness through Envoy's status listener 15021 (it proves Envoy
	// serves); quit through the agent on 15020, loopback only: since Istio 1.21 it kills Envoy
	// at once (no drain; only SIGTERM drains) and exits 0. The injector adds a native sidecar by
	// default since 1.28 when every node runs Kubernetes 1.33+ (KUBERNETES.md 7).
	{Name: "istio", Title: "Istio",
		Sidecar: sidecar.Sidecar{Name: "istio",
			Ready: &sidecar.Check{Kind: sidecar.HTTPStatus, URL: "http://127.0.0.1:15021/healthz/ready"},
			Quit: &sidecar.Call{URL: "http://127.0.0.1:15020/quitquitquit",
				Hints: []sidecar.Hint{{Status: 403, Message: "Istio's agent" + loopbackOnly}}}},
		Notes:    "the agent (Istio 1.21+) kills Envoy at once, without draining, and exits 0 (only SIGTERM drains); it accepts the quit only from loopback (403 otherwise)",
		Marks:    []Mark{{Key: istioStatus}},
		Requests: []Mark{{Key: "sidecar.istio.io/inject", Value: "true", Label: true}, {Key: "sidecar.istio.io/inject", Value: "true"}},
		// Istio: the namespace label istio-injection=enabled, or a revision label.
		NamespaceRequests: []Mark{{Key: "istio-injection", Value: "enabled", Label: true}, {Key: "istio.io/rev", Label: true}},
		Unless:            []Mark{{Key: "sidecar.istio.io/inject", Value: "false", Label: true}, {Key: "sidecar.istio.io/inject", Value: "false"}},
		// The annotations the injection template and the agent read (SIDECARS.md 15.1).
		Expects:    []string{"proxy.istio.io/config", "sidecar.istio.io/", "traffic.sidecar.istio.io/", "status.sidecar.istio.io/", "readiness.status.sidecar.istio.io/"},
		Container:  "istio-proxy",
		Containers: []Match{{Name: "istio-proxy"}},
		QuitPort:   []Source{{Annotation: "status.sidecar.istio.io/port"}},
		// 0 starts no status server: no quit, and Envoy's 15021 has nothing to ask (SIDECARS.md 3.1).
		Off: []Source{{Annotation: "status.sidecar.istio.io/port", Value: "0"}},
		// Envoy's admin on 15000 beside the agent (SIDECARS.md 3.1).
		EnvoyAdminPort: 15000,
		Native: Native{Marks: []Mark{{Key: "sidecar.istio.io/nativeSidecar", Value: "true"}},
			ClassicMarks: []Mark{{Key: "sidecar.istio.io/nativeSidecar", Value: "false"}},
			ByDefault:    Maybe, Why: "Istio 1.28+ injects native sidecars when every node runs Kubernetes 1.33+ (ENABLE_NATIVE_SIDECARS=auto); older releases, or a cluster with an older node, get classic ones",
			Honoured:  "Istio 1.24+ (1.24.0's change notes, istio/istio#53452; KUBERNETES.md 7)",
			FromMarks: istioNativeByStatus},
		Reads: "native when `" + istioStatus + "` lists `istio-proxy` among its `initContainers`; " +
			"`status.sidecar.istio.io/port: \"0\"` turns the agent's status server off: neither endpoint"},

	// Linkerd (SIDECARS.md 4): admin on 4191; /shutdown is off unless enabled, and loopback
	// only. Linkerd 2.20 (edge-26.5.2) injects native sidecars by default.
	{Name: "linkerd", Title: "Linkerd",
		Sidecar: sidecar.Sidecar{Name: "linkerd",
			Ready: &sidecar.Check{Kind: sidecar.HTTPStatus, URL: "http://127.0.0.1:4191/ready"},
			Quit: &sidecar.Call{URL: "http://127.0.0.1:4191/shutdown", Hints: []sidecar.Hint{
				{Status: 404, BodyContains: "shutdown endpoint is not enabled", Message: "Linkerd's /shutdown endpoint is disabled: annotate the pod with " + linkerdShutdown + ": enabled (Helm: proxy.enableShutdownEndpoint=true), or run the proxy as a native sidecar"},
				{Status: 403, Message: "Linkerd's proxy" + loopbackOnly}}}},
		Notes:    "`/shutdown` is off unless the pod has `" + linkerdShutdown + ": enabled` (404 otherwise); loopback only",
		Marks:    []Mark{{Key: "linkerd.io/proxy-version"}},
		Requests: []Mark{{Key: "linkerd.io/inject", Value: "enabled"}},
		// Linkerd: the same annotation on the namespace.
		NamespaceRequests: []Mark{{Key: "linkerd.io/inject", Value: "enabled"}},
		Unless:            []Mark{{Key: "linkerd.io/inject", Value: "disabled"}},
		// The proxy's configuration annotations, read by the injector (SIDECARS.md 15.2).
		Expects:    []string{"config.linkerd.io/", "config.alpha.linkerd.io/", "config.beta.linkerd.io/"},
		Container:  "linkerd-proxy",
		Containers: []Match{{Name: "linkerd-proxy"}},
		ReadyPort:  []Source{{Annotation: "config.linkerd.io/admin-port"}},
		QuitPort:   []Source{{Annotation: "config.linkerd.io/admin-port"}},
		QuitSwitch: &Switch{Rule: "linkerd-shutdown-off", What: "/shutdown endpoint",
			// The proxy's own variable, which the injector sets from the annotation or the Helm
			// value, decides; proxies before mid-2024 had no such switch and always served it.
			On:    []Source{{Env: "LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED", Value: "true"}, {Annotation: linkerdShutdown, Value: "enabled"}},
			Fix:   "add the pod annotation " + linkerdShutdown + ": enabled (or the Helm value proxy.enableShutdownEndpoint: true)",
			Maybe: "the Helm value proxy.enableShutdownEndpoint does it for every pod; proxies before mid-2024 always serve it"},
		Native: Native{
			Marks: []Mark{{Key: "config.beta.linkerd.io/proxy-enable-native-sidecar", Value: "true"},
				{Key: "config.linkerd.io/proxy-enable-native-sidecar", Value: "true"},
				{Key: "config.alpha.linkerd.io/proxy-enable-native-sidecar", Value: "true"}},
			ClassicMarks: []Mark{{Key: "config.beta.linkerd.io/proxy-enable-native-sidecar", Value: "false"},
				{Key: "config.linkerd.io/proxy-enable-native-sidecar", Value: "false"},
				{Key: "config.alpha.linkerd.io/proxy-enable-native-sidecar", Value: "false"}},
			ByDefault: Maybe, Why: "Linkerd 2.20+ injects native sidecars by default; older releases, or proxy.nativeSidecar: false, classic ones",
			Honoured: "Linkerd 2.19+ (edge-25.10.2) for the beta spelling; 2.15 to 2.18 read only the alpha one (KUBERNETES.md 7)"},
		// linkerd-await -S/--shutdown runs the command, then posts /shutdown (SIDECARS.md 4.5).
		Quitters: []Quitter{{Program: "linkerd-await", Flags: []string{"--shutdown", "-S", "--shutdown=true"}}},
		Reads: "native with `config.linkerd.io/proxy-enable-native-sidecar: true` (or the beta and alpha spellings); " +
			"the quit only with `" + linkerdShutdown + ": enabled` (or the proxy's `LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED`)"},

	// Consul (SIDECARS.md 5): Envoy's admin on 127.0.0.1:19000 for readiness; consul-k8s's
	// lifecycle server on 20600 drains and quits (Envoy's own /quitquitquit is undone by the
	// liveness probe). Native only when asked for.
	{Name: "consul", Title: "Consul dataplane",
		Sidecar: sidecar.Sidecar{Name: "consul",
			Ready: &sidecar.Check{Kind: sidecar.EnvoyAdmin, URL: "http://127.0.0.1:19000"},
			Quit: &sidecar.Call{URL: "http://127.0.0.1:20600/graceful_shutdown", Hints: []sidecar.Hint{
				{Refused: true, Message: "Consul's lifecycle server is not listening: it needs consul-k8s 1.2+ (annotation consul.hashicorp.com/enable-sidecar-proxy-lifecycle)"}}}},
		Notes:      "Envoy's admin for readiness, consul-k8s's lifecycle server for the quit",
		Marks:      []Mark{{Key: "consul.hashicorp.com/connect-inject-status", Value: "injected"}},
		Requests:   []Mark{{Key: "consul.hashicorp.com/connect-inject", Value: "true"}},
		Container:  "consul-dataplane",
		Containers: []Match{{Name: "consul-dataplane"}},
		QuitPort:   []Source{{Annotation: "consul.hashicorp.com/sidecar-proxy-lifecycle-graceful-port"}},
		Native: Native{Marks: []Mark{{Key: "consul.hashicorp.com/enable-consul-dataplane-as-sidecar", Value: "true"}}, ByDefault: Classic,
			Honoured: "consul-k8s 1.9.0+ (hashicorp/consul-k8s#4678; KUBERNETES.md 7)"}},

	// Kuma (SIDECARS.md 6): kuma-dp's Envoy admin on 127.0.0.1:9901; kuma-dp stops when Envoy
	// exits, and Kuma's control plane stops the sidecar of a pod a Job owns once the other
	// containers ended.
	{Name: "kuma", Title: "Kuma",
		Sidecar: sidecar.Sidecar{Name: "kuma",
			Ready: &sidecar.Check{Kind: sidecar.EnvoyAdmin, URL: "http://127.0.0.1:9901"},
			Quit:  &sidecar.Call{URL: "http://127.0.0.1:9901/quitquitquit"}},
		Notes:    "kuma-dp stops when its Envoy does",
		Marks:    []Mark{{Key: "kuma.io/sidecar-injected", Value: "true"}},
		Requests: []Mark{{Key: "kuma.io/sidecar-injection", Value: "enabled", Label: true}, {Key: "kuma.io/sidecar-injection", Value: "enabled"}},
		// Kuma: the namespace label.
		NamespaceRequests: []Mark{{Key: "kuma.io/sidecar-injection", Value: "enabled", Label: true}},
		Expects:           []string{"kuma.io/"},
		Container:         "kuma-sidecar",
		Containers:        []Match{{Name: "kuma-sidecar"}},
		ReadyPort:         []Source{{Annotation: "kuma.io/envoy-admin-port"}},
		QuitPort:          []Source{{Annotation: "kuma.io/envoy-admin-port"}},
		Native:            Native{ByDefault: Maybe, Why: "Kuma injects native sidecars on recent releases and Kubernetes versions"},
		QuitsInJobs:       true},

	// Dapr (SIDECARS.md 7): wait on the outbound health (the full /v1.0/healthz waits for the
	// app, which would deadlock a job started after the sidecar); quit answers 204. The API
	// token header is added when DAPR_API_TOKEN is set. dapr.io/enabled both asks for the
	// sidecar and marks it.
	{Name: "dapr", Title: "Dapr",
		Sidecar: sidecar.Sidecar{Name: "dapr",
			Ready: &sidecar.Check{Kind: sidecar.HTTPStatus, URL: "http://127.0.0.1:3500/v1.0/healthz/outbound"},
			Quit: &sidecar.Call{URL: "http://127.0.0.1:3500/v1.0/shutdown", Hints: []sidecar.Hint{
				{Status: 401, Message: "Dapr wants its API token: set DAPR_API_TOKEN in this container"}}}},
		Notes:      "not `/v1.0/healthz`, which waits for the app and so deadlocks a job; sends `dapr-api-token` when `DAPR_API_TOKEN` is set, never logged",
		Marks:      []Mark{{Key: "dapr.io/enabled", Value: "true"}},
		Container:  "daprd",
		Containers: []Match{{Name: "daprd"}},
		ReadyPort:  []Source{{Annotation: "dapr.io/http-port"}},
		QuitPort:   []Source{{Annotation: "dapr.io/http-port"}},
		Credential: &Credential{Env: "DAPR_API_TOKEN", Header: "dapr-api-token"},
		Native: Native{Marks: []Mark{{Key: "dapr.io/enable-native-sidecar", Value: "true"}}, ByDefault: Classic,
			Honoured: "Dapr 1.18.0+ (dapr/dapr#9450; KUBERNETES.md 7)"}},

	// The Cloud SQL Auth Proxy v2 (SIDECARS.md 8): health checks on 9090 need --health-check,
	// the admin port 9091 (bound to "localhost") needs --quitquitquit; each flag is also a
	// CSQL_PROXY_ variable. It is added by hand or by operators that leave no mark. gce-proxy is
	// v1's image, which has neither: found so that it is never wrapped.
	{Name: "cloudsql", Title: "Cloud SQL Auth Proxy",
		Sidecar: sidecar.Sidecar{Name: "cloudsql",
			Ready: &sidecar.Check{Kind: sidecar.HTTPStatus, URL: "http://127.0.0.1:9090/startup"},
			Quit: &sidecar.Call{URL: "http://localhost:9091/quitquitquit", Hints: []sidecar.Hint{
				{Refused: true, Message: "the Cloud SQL Auth Proxy answers /quitquitquit only when started with --quitquitquit (admin port --admin-port, 9091)"},
				// A 404 means the call reached a server that has no /quitquitquit: the proxy's
				// health port (9090), or its admin port opened by --debug alone.
				{Status: 404, Message: "this port has no /quitquitquit: the Cloud SQL Auth Proxy serves it on its admin port (--admin-port, default 9091; not the health-check port, --http-port 9090) and only when started with --quitquitquit; set the port with cloudsql:quit-port=N"}}}},
		Notes:      "needs the proxy's `--health-check` and `--quitquitquit` (or `CSQL_PROXY_HEALTH_CHECK`, `CSQL_PROXY_QUITQUITQUIT`); exits 0; two ports, so `ready-port=`/`quit-port=`, never `port=`",
		Containers: []Match{{Image: "cloud-sql-proxy"}, {Image: "cloudsql-proxy"}, {Image: "cloud_sql_proxy"}, {Image: "gce-proxy"}},
		ReadyPort:  []Source{{Flag: "http-port"}, {Env: "CSQL_PROXY_HTTP_PORT"}},
		QuitPort:   []Source{{Flag: "admin-port"}, {Env: "CSQL_PROXY_ADMIN_PORT"}},
		ReadySwitch: &Switch{Rule: "cloudsql-no-health-check", What: "health check (--health-check)",
			On:  []Source{{Flag: "health-check"}, {Env: "CSQL_PROXY_HEALTH_CHECK"}},
			Fix: "add --health-check (and --http-port if 9090 is taken)", Unavailable: cloudSQLv1, UnavailableFix: cloudSQLv1Fix},
		QuitSwitch: &Switch{Rule: "cloudsql-no-quitquitquit", What: "/quitquitquit endpoint (--quitquitquit)",
			On:  []Source{{Flag: "quitquitquit"}, {Env: "CSQL_PROXY_QUITQUITQUIT"}},
			Fix: "add --quitquitquit (and --admin-port if 9091 is taken)", Unavailable: cloudSQLv1, UnavailableFix: cloudSQLv1Fix},
		Native: Native{ByDefault: Classic},
		// Native (SIDECARS.md 8.1): a startup probe on /startup, as the Cloud SQL proxy operator
		// gives its native sidecars, which needs the health check on and its server on every
		// address, since the kubelet probes the pod's IP (the operator sets the same variables).
		Convert: &Convert{ProbePath: "/startup",
			Needs: []Need{
				{What: "its health check (--health-check)", On: []Source{{Flag: "health-check"}, {Env: "CSQL_PROXY_HEALTH_CHECK"}},
					Add: manifest.EnvVar{Name: "CSQL_PROXY_HEALTH_CHECK", Value: "true"}},
				{What: "the address of its health check (--http-address)", On: []Source{{Flag: "http-address"}, {Env: "CSQL_PROXY_HTTP_ADDRESS"}},
					Want: []string{"0.0.0.0", "::", "[::]"}, Add: manifest.EnvVar{Name: "CSQL_PROXY_HTTP_ADDRESS", Value: "0.0.0.0"}}},
			Unprobed:    cloudSQLv1,
			UnprobedWhy: "v1 (gce-proxy) has no health check, so neither the kubelet nor sidesync can wait for it; move to v2 for a startup probe"},
		Reads: "the proxy's flags `--health-check`, `--http-port`, `--quitquitquit`, `--admin-port`, or their `CSQL_PROXY_*` variables"},

	// Vault Agent (SIDECARS.md 10): no readiness endpoint; the quit API needs agent-enable-quit.
	// Its injector has no native sidecars, and none at all with agent-pre-populate-only (an init
	// container renders the secrets).
	{Name: "vault", Title: "Vault Agent",
		Sidecar: sidecar.Sidecar{Name: "vault",
			Quit: &sidecar.Call{URL: "http://127.0.0.1:8200/agent/v1/quit", Hints: []sidecar.Hint{
				{Status: 404, Message: "Vault Agent's quit API is off: annotate the pod with " + vaultEnableQuit + ": \"true\""}}}},
		Notes:      "needs `" + vaultEnableQuit + ": \"true\"`",
		Marks:      []Mark{{Key: "vault.hashicorp.com/agent-inject-status", Value: "injected"}},
		Requests:   []Mark{{Key: "vault.hashicorp.com/agent-inject", Value: "true"}},
		Unless:     []Mark{{Key: "vault.hashicorp.com/agent-pre-populate-only", Value: "true"}},
		Container:  "vault-agent",
		Containers: []Match{{Name: "vault-agent"}},
		QuitPort:   []Source{{Annotation: "vault.hashicorp.com/agent-cache-listener-port"}},
		QuitSwitch: &Switch{Rule: "vault-quit-off", What: "quit API",
			On: []Source{{Annotation: vaultEnableQuit, Value: "true"}},
			Fix: "add vault.hashicorp.com/agent-pre-populate-only: \"true\" if the app needs its secrets only at start (an init container renders them, no sidecar), or " +
				vaultEnableQuit + ": \"true\""},
		Native: Native{ByDefault: Classic},
		// Native without a startup probe (SIDECARS.md 10): it has no health endpoint, so a
		// wrapper cannot wait for it either, and as a native sidecar the kubelet ends it after
		// the apps, with or without its quit API.
		Convert: &Convert{NoProbe: "Vault Agent has no health endpoint, so neither the kubelet nor sidesync can wait for it; the kubelet stops it after the apps"},
		Reads:   "no quit call unless `" + vaultEnableQuit + ": \"true\"`"},

	// AWS App Mesh's Envoy (SIDECARS.md 9), admin 9901; its bind address is not documented.
	{Name: "appmesh", Title: "App Mesh Envoy",
		Sidecar: sidecar.Sidecar{Name: "appmesh",
			Ready: &sidecar.Check{Kind: sidecar.EnvoyAdmin, URL: "http://localhost:9901"},
			Quit:  &sidecar.Call{URL: "http://localhost:9901/quitquitquit"}},
		Notes:      "AWS App Mesh's Envoy",
		Containers: []Match{{Name: "envoy", Image: "appmesh"}},
		Native:     Native{ByDefault: Classic}},

	// The generic profiles, whose endpoints the user gives.
	{Name: "http", Sidecar: sidecar.Sidecar{Name: "http"}, Notes: "any HTTP sidecar",
		ReadyWhen: "`ready=URL` answers 2xx (or `status=N`)", QuitWith: "`quit=URL` (POST, or `method=`)",
		Undetectable: genericUndetectable},
	{Name: "tcp", Sidecar: sidecar.Sidecar{Name: "tcp"}, Notes: "anything without a health endpoint",
		ReadyWhen: "`ready=tcp://HOST:PORT` accepts a connection", QuitWith: "(none, or `quit=URL`)",
		Undetectable: genericUndetectable},

	// The container Airflow's KubernetesPodOperator adds to read a task's XCom result; the
	// operator stops it itself once the base container has ended (SIDECARS.md 16).
	{Name: "airflow-xcom", Title: "Airflow's XCom sidecar",
		StoppedBy:  "Airflow's KubernetesPodOperator, which stops it after the task's container ends",
		Containers: []Match{{Name: "airflow-xcom-sidecar"}}},

	// The Cloud Storage FUSE sidecar that GKE's CSI driver adds to a pod annotated
	// gke-gcsfuse/volumes: "true" (as the first regular container where native sidecars are not
	// used); in a Job's pod, or one with restartPolicy Never, it ends by itself once the other
	// containers have exited (SIDECARS.md 16.4).
	{Name: "gke-gcsfuse", Title: "GKE's Cloud Storage FUSE sidecar",
		StoppedBy:  "GKE's Cloud Storage FUSE CSI driver, whose sidecar ends by itself after the other containers of a Job's pod",
		Containers: []Match{{Name: "gke-gcsfuse-sidecar"}}},

	// The sidecars of a Tekton TaskRun's pod, named "sidecar-" and the Task's name; Tekton stops
	// them once the last step has ended (SIDECARS.md 16).
	{Name: "tekton-sidecar", Title: "a Tekton Task's sidecar",
		StoppedBy:  "Tekton, which stops a TaskRun's sidecars after its last step",
		Containers: []Match{{NamePrefix: "sidecar-", When: &Mark{Key: "tekton.dev/taskRun", Label: true}}}},
}

// loopbackOnly ends the hint for sidecars that refuse quit calls from other addresses (403).
const loopbackOnly = " accepts this call only from localhost: send it to 127.0.0.1 or localhost, not the pod IP"

// istioStatus is the annotation Istio's injector leaves: JSON that lists the containers it added.
const istioStatus = "sidecar.istio.io/status"

// istioNativeByStatus reads Istio's status annotation: the proxy is native when it was injected
// as an init container.
func istioNativeByStatus(ann map[string]string) bool {
	st, err := jsonlite.Decode([]byte(ann[istioStatus]))
	m, _ := st.(map[string]any)
	inits, _ := m["initContainers"].([]any)
	return err == nil && slices.Contains(inits, any("istio-proxy"))
}

// linkerdShutdown is the annotation that switches Linkerd's /shutdown endpoint on.
const linkerdShutdown = "config.linkerd.io/proxy-admin-shutdown"

// vaultEnableQuit is the annotation that switches Vault Agent's quit API on.
const vaultEnableQuit = "vault.hashicorp.com/agent-enable-quit"

// cloudSQLv1 is the Cloud SQL Auth Proxy's v1 image, which has neither endpoint.
var cloudSQLv1 = []Match{{Image: "gce-proxy"}}

const cloudSQLv1Fix = "v1 (gcr.io/cloudsql-docker/gce-proxy) has neither --quitquitquit nor --health-check: move to v2, gcr.io/cloud-sql-connectors/cloud-sql-proxy"

const genericUndetectable = "a generic profile, whose endpoints the user gives"
