package main

import (
	"fmt"
	"io"

	"github.com/sidesync/sidesync/internal/config"
)

const helpIntro = `sidesync keeps a command in step with the sidecars of its Kubernetes pod.

Usage:
  sidesync [flags] -- CMD [ARGS...]   wait for the sidecars, run CMD, tell the sidecars to quit,
                                      exit with CMD's exit code
  sidesync wait [flags]               only wait until the sidecars are ready
  sidesync quit [flags]               only tell the sidecars to quit
  sidesync check [flags]              probe each sidecar once and print a table
  sidesync demo                       watch the whole job against an emulated Envoy on loopback
  sidesync version                    print the version
  sidesync emulate PROFILE [flags]    run an emulated sidecar (for tests and trials); -h for its flags

Sidecars: --sidecar istio --sidecar cloudsql (or SIDESYNC_SIDECARS=istio,cloudsql) names them by
profile: envoy, osm, istio, linkerd, consul, kuma, dapr, cloudsql, vault, appmesh, http, tcp.
Overrides follow a colon: cloudsql:ready-port=9090,quit-port=9091; http:ready=URL,quit=URL;
tcp:ready=tcp://127.0.0.1:5432; keys: name, ready, quit, port, ready-port, quit-port, host, method,
status, native, startup-probe. With no sidecar configured, sidesync detects them from the pod's
annotations (a downward-API volume at --pod-info) or from the pod in the Kubernetes API; if it
finds none it runs CMD at once and says so. Native sidecars (init containers with restartPolicy:
Always) are never told to quit, and are waited for unless they have a startup probe.

Waiting probes every 20ms until the sidecar answers ready, for at most 2 minutes; quitting is
retried and ends within 10s. Every flag has a SIDESYNC_* environment variable (in brackets); a
flag wins over its variable.
`

const helpContracts = `
Environment contracts of other tools, accepted unchanged (a SIDESYNC_* setting wins over them):
  the article's job   PROXY=true turns waiting and quitting on (anything else: no sidecar);
                      proxyEndpoint is the admin base URL ("http://127.0.0.1:15000/");
                      interval is Polly's median first retry delay in whole seconds;
                      maxRetries is the retry count.
  scuttle             ENVOY_ADMIN_API, START_WITHOUT_ENVOY, WAIT_FOR_ENVOY_TIMEOUT,
                      QUIT_WITHOUT_ENVOY_TIMEOUT, ISTIO_QUIT_API, NEVER_KILL_ISTIO,
                      NEVER_KILL_ISTIO_ON_FAILURE, GENERIC_QUIT_ENDPOINTS, GENERIC_QUIT_ONLY,
                      QUIT_REQUEST_TIMEOUT, SCUTTLE_LOGGING, with scuttle's meanings; but no
                      pkill, and invalid values are errors rather than ignored.

Exit codes:
  N        CMD exited with N
  128+S    CMD was killed by signal S (or sidesync got S while waiting)
  126/127  CMD could not be executed / was not found
  2        bad flags or environment (every problem is listed)
  69       the sidecar never became ready and --on-timeout is fail (CMD did not run)
  70       sidesync failed internally

Signals TERM, INT, HUP, QUIT, USR1, USR2 and WINCH are forwarded to CMD (never URG or CHLD).
TERM, INT, HUP or QUIT while waiting stop the wait: CMD does not run, the sidecar is still told
to quit (per --quit), and sidesync exits 128+S. Logs go to stderr; stdout is CMD's alone.
`

func printHelp(w io.Writer) {
	fmt.Fprint(w, helpIntro)
	fmt.Fprintln(w, "\nFlags:")
	config.PrintFlags(w)
	fmt.Fprint(w, helpContracts)
}
