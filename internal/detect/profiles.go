package detect

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// The functions of single rows of Signatures: what a profile's marks or container say beyond
// the table's plain data.

// istioMarks reads Istio's status annotation: the proxy is native when it was injected as an
// init container (restartPolicy: Always; Istio 1.19+ with native sidecars on).
func istioMarks(f *Found, ann map[string]string) {
	var st struct {
		InitContainers []string `json:"initContainers"`
	}
	if json.Unmarshal([]byte(ann[istioStatus]), &st) == nil && slices.Contains(st.InitContainers, "istio-proxy") {
		f.Sidecar.Native = true
	}
}

// linkerdMarks reads Linkerd's annotations: native sidecar, shutdown endpoint.
func linkerdMarks(f *Found, ann map[string]string) {
	for _, prefix := range []string{"config.linkerd.io/", "config.beta.linkerd.io/", "config.alpha.linkerd.io/"} {
		if ann[prefix+linkerdNativePrefix] == "true" {
			f.Sidecar.Native = true
		}
	}
	if !f.Sidecar.Native && ann[linkerdShutdown] != "enabled" {
		f.Notes = append(f.Notes, "Linkerd's /shutdown endpoint is off unless the pod has "+linkerdShutdown+": enabled; the quit will fail without it")
	}
}

// vaultMarks: Vault Agent has nothing to wait for, and a quit only if its quit API is on.
func vaultMarks(f *Found, ann map[string]string) {
	if ann[vaultEnableQuit] != "true" {
		f.Sidecar.Quit = nil
		f.Notes = append(f.Notes, "Vault Agent's quit API is off ("+vaultEnableQuit+" is not \"true\"): it cannot be told to quit")
	}
}

// cloudSQLContainer reads the Cloud SQL Auth Proxy's flags from its container.
func cloudSQLContainer(f *Found, c container) { cloudSQLFlags(f, append(c.Command, c.Args...)) }

// cloudSQLFlags reads the proxy's flags: its health checks and quit endpoint exist only when
// enabled, on ports that flags may change (sidecar-protocols.md 8).
func cloudSQLFlags(f *Found, args []string) {
	if _, on := FlagValue(args, "health-check"); !on {
		f.Sidecar.Ready = nil
		f.Notes = append(f.Notes, "the Cloud SQL Auth Proxy runs without --health-check: nothing to wait for")
	} else if p, ok := FlagValue(args, "http-port"); ok {
		f.Sidecar = f.Sidecar.WithPorts(atoi(p), 0)
	}
	if _, on := FlagValue(args, "quitquitquit"); !on {
		f.Sidecar.Quit = nil
		f.Notes = append(f.Notes, "the Cloud SQL Auth Proxy runs without --quitquitquit: it cannot be told to quit")
	} else if p, ok := FlagValue(args, "admin-port"); ok {
		f.Sidecar = f.Sidecar.WithPorts(0, atoi(p))
	}
}

// flagValue finds --name, --name=V or --name V (also with one dash) in args. A boolean flag
// given as --name=false counts as absent.
func FlagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		a = strings.TrimLeft(a, "-")
		if a == name {
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				return args[i+1], true
			}
			return "", true
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, v != "false"
		}
	}
	return "", false
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0 // WithPorts keeps the default port
	}
	return n
}
