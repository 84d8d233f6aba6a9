package detect

// The annotations and labels that injectors put on the pods they inject, spelt as the injectors
// spell them (not read from the catalog, so that a misspelt row fails a test).
const (
	istioStatus        = "sidecar.istio.io/status"
	istioStatusPort    = "status.sidecar.istio.io/port"
	linkerdVersion     = "linkerd.io/proxy-version"
	linkerdAdminPort   = "config.linkerd.io/admin-port"
	linkerdShutdown    = "config.linkerd.io/proxy-admin-shutdown"
	consulInjected     = "consul.hashicorp.com/connect-inject-status"
	consulGracefulPort = "consul.hashicorp.com/sidecar-proxy-lifecycle-graceful-port"
	kumaInjected       = "kuma.io/sidecar-injected"
	kumaAdminPort      = "kuma.io/envoy-admin-port"
	daprEnabled        = "dapr.io/enabled"
	daprHTTPPort       = "dapr.io/http-port"
	vaultInjected      = "vault.hashicorp.com/agent-inject-status"
	vaultPrePopulate   = "vault.hashicorp.com/agent-pre-populate-only"
	vaultEnableQuit    = "vault.hashicorp.com/agent-enable-quit"
	osmProxyLabel      = "osm-proxy-uuid"
)
