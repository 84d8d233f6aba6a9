package catalog

import (
	"encoding/json"
	"slices"

	"github.com/sidesync/sidesync/sidecar"
)

// rows is the catalog. Every value comes from the sidecar's or its injector's own source code or
// documentation; docs/SIDECARS.md gives them with their upstream sources (the section is named
// in each comment). Loopback is written 127.0.0.1 where the sidecar binds IPv4, and localhost
// where it binds "localhost" or the address is not documented: sidesync's client tries every
// address localhost stands for, IPv6 included, and never looks it up.
//
// A new row also needs an emulator profile (internal/emulator, Profiles) and a process-level
// case (cmd/sidesync, profileCases); TestProfilesComplete fails until both are there, and the
// README's tests until its tables are regenerated (go generate ./internal/catalog).
func rows() []Entry {
	return []Entry{
		envoy(), osm(), istio(), linkerd(), consul(), kuma(), dapr(), cloudSQL(), vault(), appMesh(),
		generic("http", "any HTTP sidecar", "`ready=URL` answers 2xx (or `status=N`)", "`quit=URL` (POST, or `method=`)"),
		generic("tcp", "anything without a health endpoint", "`ready=tcp://HOST:PORT` accepts a connection", "(none, or `quit=URL`)"),
		airflowXCom(), tektonSidecars(),
	}
}

func ready(kind sidecar.CheckKind, url string) *sidecar.Check {
	return &sidecar.Check{Kind: kind, URL: url}
}

func quit(url string, hints ...sidecar.Hint) *sidecar.Call {
	return &sidecar.Call{URL: url, Hints: hints}
}

// profile is the sidecar called name with the given endpoints.
func profile(name string, r *sidecar.Check, q *sidecar.Call) sidecar.Sidecar {
	return sidecar.Sidecar{Name: name, Ready: r, Quit: q}
}

// loopbackOnly is the hint for sidecars that refuse quit calls from other addresses (403).
func loopbackOnly(who string) sidecar.Hint {
	return sidecar.Hint{Status: 403, Message: who + " accepts this call only from localhost: send it to 127.0.0.1 or localhost, not the pod IP"}
}

func annotation(key, value string) Mark { return Mark{Key: key, Value: value} }

func label(key, value string) Mark { return Mark{Key: key, Value: value, Label: true} }

// envoy is any Envoy (SIDECARS.md 1): 9901 is the admin address Envoy's docs recommend.
func envoy() Entry {
	return Entry{Name: "envoy", Title: "Envoy",
		Sidecar: profile("envoy", ready(sidecar.EnvoyAdmin, "http://127.0.0.1:9901"), quit("http://127.0.0.1:9901/quitquitquit")),
		Notes:   "any Envoy; 9901 is Envoy's documented admin port",
		// A container named envoy may be anyone's.
		Undetectable: "a plain Envoy carries no injector's mark, and a container named envoy may be anyone's"}
}

// osm is Open Service Mesh (SIDECARS.md 2): Envoy itself, admin on 127.0.0.1:15000. Its webhook
// labels the pods it injects with osm-proxy-uuid and adds a container named envoy.
func osm() Entry {
	return Entry{Name: "osm", Title: "Open Service Mesh",
		Sidecar:   profile("osm", ready(sidecar.EnvoyAdmin, "http://127.0.0.1:15000"), quit("http://127.0.0.1:15000/quitquitquit")),
		Notes:     "Open Service Mesh (archived); the article's setup",
		Marks:     []Mark{label("osm-proxy-uuid", "")},
		Requests:  []Mark{annotation("openservicemesh.io/sidecar-injection", "enabled")},
		Container: "envoy",
		Native:    Native{ByDefault: Classic},
	}
}

// istio (SIDECARS.md 3): readiness through Envoy's status listener 15021 (it proves Envoy
// serves); quit through the agent on 15020, loopback only: since Istio 1.21 it kills Envoy at
// once (no drain; only SIGTERM drains) and exits 0. The injector adds a native sidecar by
// default since 1.28 when every node runs Kubernetes 1.33+ (KUBERNETES.md 7).
func istio() Entry {
	nativeMark := annotation("sidecar.istio.io/nativeSidecar", "true")
	return Entry{Name: "istio", Title: "Istio",
		Sidecar: profile("istio", ready(sidecar.HTTPStatus, "http://127.0.0.1:15021/healthz/ready"),
			quit("http://127.0.0.1:15020/quitquitquit", loopbackOnly("Istio's agent"))),
		Notes:      "the agent (Istio 1.21+) kills Envoy at once, without draining, and exits 0 (only SIGTERM drains); it accepts the quit only from loopback (403 otherwise)",
		Marks:      []Mark{annotation(istioStatus, "")},
		Requests:   []Mark{label("sidecar.istio.io/inject", "true"), annotation("sidecar.istio.io/inject", "true")},
		Unless:     []Mark{label("sidecar.istio.io/inject", "false"), annotation("sidecar.istio.io/inject", "false")},
		Container:  "istio-proxy",
		Containers: []Match{{Name: "istio-proxy"}},
		QuitPort:   []Source{{Annotation: "status.sidecar.istio.io/port"}},
		Native: Native{Marks: []Mark{nativeMark}, ClassicMarks: []Mark{annotation("sidecar.istio.io/nativeSidecar", "false")},
			ByDefault: Maybe, Why: "Istio 1.28+ injects native sidecars when every node runs Kubernetes 1.33+ (ENABLE_NATIVE_SIDECARS=auto); older releases, or a cluster with an older node, get classic ones",
			FromMarks: istioNativeByStatus},
		Reads: "native when `" + istioStatus + "` lists `istio-proxy` among its `initContainers`",
	}
}

// istioStatus is the annotation Istio's injector leaves: JSON that lists the containers it added.
const istioStatus = "sidecar.istio.io/status"

// istioNativeByStatus reads Istio's status annotation: the proxy is native when it was injected
// as an init container.
func istioNativeByStatus(ann map[string]string) bool {
	var st struct {
		InitContainers []string `json:"initContainers"`
	}
	return json.Unmarshal([]byte(ann[istioStatus]), &st) == nil && slices.Contains(st.InitContainers, "istio-proxy")
}

// linkerd (SIDECARS.md 4): admin on 4191; /shutdown is off unless enabled, and loopback only.
// Linkerd 2.20 (edge-26.5.2) injects native sidecars by default.
func linkerd() Entry {
	const shutdown = "config.linkerd.io/proxy-admin-shutdown"
	native := annotation("config.beta.linkerd.io/proxy-enable-native-sidecar", "true")
	return Entry{Name: "linkerd", Title: "Linkerd",
		Sidecar: profile("linkerd", ready(sidecar.HTTPStatus, "http://127.0.0.1:4191/ready"),
			quit("http://127.0.0.1:4191/shutdown",
				sidecar.Hint{Status: 404, BodyContains: "shutdown endpoint is not enabled", Message: "Linkerd's /shutdown endpoint is disabled: annotate the pod with " + shutdown + ": enabled (Helm: proxy.enableShutdownEndpoint=true), or run the proxy as a native sidecar"},
				loopbackOnly("Linkerd's proxy"))),
		Notes:      "`/shutdown` is off unless the pod has `" + shutdown + ": enabled` (404 otherwise); loopback only",
		Marks:      []Mark{annotation("linkerd.io/proxy-version", "")},
		Requests:   []Mark{annotation("linkerd.io/inject", "enabled")},
		Unless:     []Mark{annotation("linkerd.io/inject", "disabled")},
		Container:  "linkerd-proxy",
		Containers: []Match{{Name: "linkerd-proxy"}},
		ReadyPort:  []Source{{Annotation: "config.linkerd.io/admin-port"}},
		QuitPort:   []Source{{Annotation: "config.linkerd.io/admin-port"}},
		QuitSwitch: &Switch{Rule: "linkerd-shutdown-off", What: "/shutdown endpoint",
			// The proxy's own variable, which the injector sets from the annotation or the Helm
			// value, decides; proxies before mid-2024 had no such switch and always served it.
			On:    []Source{{Env: "LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED", Value: "true"}, {Annotation: shutdown, Value: "enabled"}},
			Fix:   "add the pod annotation " + shutdown + ": enabled (or the Helm value proxy.enableShutdownEndpoint: true)",
			Maybe: "the Helm value proxy.enableShutdownEndpoint does it for every pod; proxies before mid-2024 always serve it"},
		Native: Native{
			Marks: []Mark{native, annotation("config.linkerd.io/proxy-enable-native-sidecar", "true"),
				annotation("config.alpha.linkerd.io/proxy-enable-native-sidecar", "true")},
			ClassicMarks: []Mark{annotation("config.beta.linkerd.io/proxy-enable-native-sidecar", "false"),
				annotation("config.linkerd.io/proxy-enable-native-sidecar", "false"),
				annotation("config.alpha.linkerd.io/proxy-enable-native-sidecar", "false")},
			ByDefault: Maybe, Why: "Linkerd 2.20+ injects native sidecars by default; older releases, or proxy.nativeSidecar: false, classic ones"},
		Reads: "native with `config.linkerd.io/proxy-enable-native-sidecar: true` (or the beta and alpha spellings); " +
			"the quit only with `" + shutdown + ": enabled` (or the proxy's `LINKERD2_PROXY_SHUTDOWN_ENDPOINT_ENABLED`)",
	}
}

// consul (SIDECARS.md 5): Envoy's admin on 127.0.0.1:19000 for readiness; consul-k8s's
// lifecycle server on 20600 drains and quits (Envoy's own /quitquitquit is undone by the
// liveness probe). Native only when asked for.
func consul() Entry {
	return Entry{Name: "consul", Title: "Consul dataplane",
		Sidecar: profile("consul", ready(sidecar.EnvoyAdmin, "http://127.0.0.1:19000"), quit("http://127.0.0.1:20600/graceful_shutdown",
			sidecar.Hint{Refused: true, Message: "Consul's lifecycle server is not listening: it needs consul-k8s 1.2+ (annotation consul.hashicorp.com/enable-sidecar-proxy-lifecycle)"})),
		Notes:      "Envoy's admin for readiness, consul-k8s's lifecycle server for the quit",
		Marks:      []Mark{annotation("consul.hashicorp.com/connect-inject-status", "injected")},
		Requests:   []Mark{annotation("consul.hashicorp.com/connect-inject", "true")},
		Container:  "consul-dataplane",
		Containers: []Match{{Name: "consul-dataplane"}},
		QuitPort:   []Source{{Annotation: "consul.hashicorp.com/sidecar-proxy-lifecycle-graceful-port"}},
		Native:     Native{Marks: []Mark{annotation("consul.hashicorp.com/enable-consul-dataplane-as-sidecar", "true")}, ByDefault: Classic},
	}
}

// kuma (SIDECARS.md 6): kuma-dp's Envoy admin on 127.0.0.1:9901; kuma-dp stops when Envoy exits,
// and Kuma's control plane stops the sidecar of a pod a Job owns once the other containers ended.
func kuma() Entry {
	return Entry{Name: "kuma", Title: "Kuma",
		Sidecar:     profile("kuma", ready(sidecar.EnvoyAdmin, "http://127.0.0.1:9901"), quit("http://127.0.0.1:9901/quitquitquit")),
		Notes:       "kuma-dp stops when its Envoy does",
		Marks:       []Mark{annotation("kuma.io/sidecar-injected", "true")},
		Requests:    []Mark{label("kuma.io/sidecar-injection", "enabled"), annotation("kuma.io/sidecar-injection", "enabled")},
		Container:   "kuma-sidecar",
		Containers:  []Match{{Name: "kuma-sidecar"}},
		ReadyPort:   []Source{{Annotation: "kuma.io/envoy-admin-port"}},
		QuitPort:    []Source{{Annotation: "kuma.io/envoy-admin-port"}},
		Native:      Native{ByDefault: Maybe, Why: "Kuma injects native sidecars on recent releases and Kubernetes versions"},
		QuitsInJobs: true,
	}
}

// dapr (SIDECARS.md 7): wait on the outbound health (the full /v1.0/healthz waits for the app,
// which would deadlock a job started after the sidecar); quit answers 204. The API token header
// is added when DAPR_API_TOKEN is set. dapr.io/enabled both asks for the sidecar and marks it.
func dapr() Entry {
	return Entry{Name: "dapr", Title: "Dapr",
		Sidecar: profile("dapr", ready(sidecar.HTTPStatus, "http://127.0.0.1:3500/v1.0/healthz/outbound"),
			quit("http://127.0.0.1:3500/v1.0/shutdown", sidecar.Hint{Status: 401, Message: "Dapr wants its API token: set DAPR_API_TOKEN in this container"})),
		Notes:      "not `/v1.0/healthz`, which waits for the app and so deadlocks a job; sends `dapr-api-token` when `DAPR_API_TOKEN` is set, never logged",
		Marks:      []Mark{annotation("dapr.io/enabled", "true")},
		Container:  "daprd",
		Containers: []Match{{Name: "daprd"}},
		ReadyPort:  []Source{{Annotation: "dapr.io/http-port"}},
		QuitPort:   []Source{{Annotation: "dapr.io/http-port"}},
		Credential: &Credential{Env: "DAPR_API_TOKEN", Header: "dapr-api-token"},
		Native:     Native{Marks: []Mark{annotation("dapr.io/enable-native-sidecar", "true")}, ByDefault: Classic},
	}
}

// cloudSQL is the Cloud SQL Auth Proxy v2 (SIDECARS.md 8): health checks on 9090 need
// --health-check, the admin port 9091 (bound to "localhost") needs --quitquitquit; each flag is
// also a CSQL_PROXY_ variable. It is added by hand or by operators that leave no mark. gce-proxy
// is v1's image, which has neither: found so that it is never wrapped.
func cloudSQL() Entry {
	v1 := []Match{{Image: "gce-proxy"}}
	const v1Fix = "v1 (gcr.io/cloudsql-docker/gce-proxy) has neither --quitquitquit nor --health-check: move to v2, gcr.io/cloud-sql-connectors/cloud-sql-proxy"
	return Entry{Name: "cloudsql", Title: "Cloud SQL Auth Proxy",
		Sidecar: profile("cloudsql", ready(sidecar.HTTPStatus, "http://127.0.0.1:9090/startup"), quit("http://localhost:9091/quitquitquit",
			sidecar.Hint{Refused: true, Message: "the Cloud SQL Auth Proxy answers /quitquitquit only when started with --quitquitquit (admin port --admin-port, 9091)"},
			// A 404 means the call reached a server that has no /quitquitquit: the proxy's
			// health port (9090), or its admin port opened by --debug alone.
			sidecar.Hint{Status: 404, Message: "this port has no /quitquitquit: the Cloud SQL Auth Proxy serves it on its admin port (--admin-port, default 9091; not the health-check port, --http-port 9090) and only when started with --quitquitquit; set the port with cloudsql:quit-port=N"})),
		Notes:      "needs the proxy's `--health-check` and `--quitquitquit` (or `CSQL_PROXY_HEALTH_CHECK`, `CSQL_PROXY_QUITQUITQUIT`); exits 0; two ports, so `ready-port=`/`quit-port=`, never `port=`",
		Containers: []Match{{Image: "cloud-sql-proxy"}, {Image: "cloudsql-proxy"}, {Image: "cloud_sql_proxy"}, {Image: "gce-proxy"}},
		ReadyPort:  []Source{{Flag: "http-port"}, {Env: "CSQL_PROXY_HTTP_PORT"}},
		QuitPort:   []Source{{Flag: "admin-port"}, {Env: "CSQL_PROXY_ADMIN_PORT"}},
		ReadySwitch: &Switch{Rule: "cloudsql-no-health-check", What: "health check (--health-check)",
			On:  []Source{{Flag: "health-check"}, {Env: "CSQL_PROXY_HEALTH_CHECK"}},
			Fix: "add --health-check (and --http-port if 9090 is taken)", Unavailable: v1, UnavailableFix: v1Fix},
		QuitSwitch: &Switch{Rule: "cloudsql-no-quitquitquit", What: "/quitquitquit endpoint (--quitquitquit)",
			On:  []Source{{Flag: "quitquitquit"}, {Env: "CSQL_PROXY_QUITQUITQUIT"}},
			Fix: "add --quitquitquit (and --admin-port if 9091 is taken)", Unavailable: v1, UnavailableFix: v1Fix},
		Native: Native{ByDefault: Classic},
		Reads:  "the proxy's flags `--health-check`, `--http-port`, `--quitquitquit`, `--admin-port`, or their `CSQL_PROXY_*` variables",
	}
}

// vault is Vault Agent (SIDECARS.md 10): no readiness endpoint; the quit API needs
// agent-enable-quit. Its injector has no native sidecars, and none at all with
// agent-pre-populate-only (an init container renders the secrets).
func vault() Entry {
	const enableQuit = "vault.hashicorp.com/agent-enable-quit"
	return Entry{Name: "vault", Title: "Vault Agent",
		Sidecar: profile("vault", nil, quit("http://127.0.0.1:8200/agent/v1/quit",
			sidecar.Hint{Status: 404, Message: "Vault Agent's quit API is off: annotate the pod with " + enableQuit + ": \"true\""})),
		Notes:      "needs `" + enableQuit + ": \"true\"`",
		Marks:      []Mark{annotation("vault.hashicorp.com/agent-inject-status", "injected")},
		Requests:   []Mark{annotation("vault.hashicorp.com/agent-inject", "true")},
		Unless:     []Mark{annotation("vault.hashicorp.com/agent-pre-populate-only", "true")},
		Container:  "vault-agent",
		Containers: []Match{{Name: "vault-agent"}},
		QuitPort:   []Source{{Annotation: "vault.hashicorp.com/agent-cache-listener-port"}},
		QuitSwitch: &Switch{Rule: "vault-quit-off", What: "quit API",
			On: []Source{{Annotation: enableQuit, Value: "true"}},
			Fix: "add vault.hashicorp.com/agent-pre-populate-only: \"true\" if the app needs its secrets only at start (an init container renders them, no sidecar), or " +
				enableQuit + ": \"true\""},
		Native: Native{ByDefault: Classic},
		Reads:  "no quit call unless `" + enableQuit + ": \"true\"`",
	}
}

// appMesh is AWS App Mesh's Envoy (SIDECARS.md 9), admin 9901; its bind address is not
// documented.
func appMesh() Entry {
	return Entry{Name: "appmesh", Title: "App Mesh Envoy",
		Sidecar:    profile("appmesh", ready(sidecar.EnvoyAdmin, "http://localhost:9901"), quit("http://localhost:9901/quitquitquit")),
		Notes:      "AWS App Mesh's Envoy",
		Containers: []Match{{Name: "envoy", Image: "appmesh"}},
		Native:     Native{ByDefault: Classic},
	}
}

// generic is a profile whose endpoints the user gives.
func generic(name, notes, readyWhen, quitWith string) Entry {
	return Entry{Name: name, Sidecar: sidecar.Sidecar{Name: name}, Notes: notes, ReadyWhen: readyWhen, QuitWith: quitWith,
		Undetectable: "a generic profile, whose endpoints the user gives"}
}

// airflowXCom is the container Airflow's KubernetesPodOperator adds to read a task's XCom
// result; the operator stops it itself once the base container has ended (SIDECARS.md 16).
func airflowXCom() Entry {
	return Entry{Name: "airflow-xcom", Title: "Airflow's XCom sidecar",
		StoppedBy:  "Airflow's KubernetesPodOperator, which stops it after the task's container ends",
		Containers: []Match{{Name: "airflow-xcom-sidecar"}}}
}

// tektonSidecars are the sidecars of a Tekton TaskRun's pod, named "sidecar-" and the Task's
// name; Tekton stops them once the last step has ended (SIDECARS.md 16).
func tektonSidecars() Entry {
	return Entry{Name: "tekton-sidecar", Title: "a Tekton Task's sidecar",
		StoppedBy:  "Tekton, which stops a TaskRun's sidecars after its last step",
		Containers: []Match{{NamePrefix: "sidecar-", When: &Mark{Key: "tekton.dev/taskRun", Label: true}}}}
}
