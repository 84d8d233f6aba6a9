package detect

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sidesync/sidesync/sidecar"
)

// Options says where to look.
type Options struct {
	PodInfoDir        string // downward-API volume with "annotations" and "labels"
	KubeAPI           bool   // ask the Kubernetes API when the annotations say nothing
	ServiceAccountDir string // token, ca.crt, namespace
	LookupEnv         func(string) (string, bool)
	Timeout           time.Duration // bounds the API request; zero means 3 s
}

// Result is what detection found.
type Result struct {
	Found  []Found
	Source string   // where they were found, for the log
	Tried  []string // why each source gave nothing, for the log line when nothing is found
	// Failed is set when detection could not look where it should have: this is a Kubernetes
	// pod, but its own Pod could not be read (no token, 403, TLS failure, timeout). Nothing found
	// then does not mean that there is no sidecar.
	Failed error
	Fix    string // what to do about Failed
}

// Detect looks at the pod's annotations in the downward-API volume first, then at the pod in
// the Kubernetes API; the first source that names a sidecar wins.
func Detect(ctx context.Context, o Options) Result {
	var r Result
	if ann, labels, ok := readPodInfo(o.PodInfoDir); ok {
		if found := fromMetadata(ann, labels); len(found) > 0 {
			return Result{Found: found, Source: "pod annotations in " + o.PodInfoDir}
		}
		r.Tried = append(r.Tried, "pod annotations in "+o.PodInfoDir+" name no injected sidecar")
	} else {
		r.Tried = append(r.Tried, "no downward-API volume at "+o.PodInfoDir)
	}
	if !o.KubeAPI {
		r.Tried = append(r.Tried, "Kubernetes API not asked (--kube-api=false)")
		return r
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p, where, err := getPod(ctx, o)
	switch {
	case errors.Is(err, errNoAPI):
		r.Tried = append(r.Tried, "Kubernetes API: "+err.Error())
	case err != nil && where == "":
		r.Tried = append(r.Tried, "Kubernetes API: "+err.Error())
		r.Failed, r.Fix = err, fixFor(err)
	case err != nil:
		r.Tried = append(r.Tried, "Kubernetes API, pod "+where+": "+err.Error())
		r.Failed, r.Fix = err, fixFor(err)
	default:
		if found := fromPod(p); len(found) > 0 {
			return Result{Found: found, Source: "the Kubernetes API, pod " + where}
		}
		r.Tried = append(r.Tried, "Kubernetes API: pod "+where+" has no known sidecar")
	}
	return r
}

// sidecarContainers names the container each injector adds.
var sidecarContainers = map[string]string{
	"istio": "istio-proxy", "linkerd": "linkerd-proxy", "consul": "consul-dataplane",
	"kuma": "kuma-sidecar", "dapr": "daprd", "vault": "vault-agent", "osm": "envoy",
}

// fromPod finds the sidecars of a Pod object: from its annotations, refined by its containers
// (native or not, startup probe), and from containers no annotation names (the Cloud SQL Auth
// Proxy, App Mesh's Envoy, hand-added sidecars).
func fromPod(p *pod) []Found {
	found := fromMetadata(p.Metadata.Annotations, p.Metadata.Labels)
	cs := p.containers()
	used := make(map[string]bool)
	for i := range found {
		name := sidecarContainers[found[i].Sidecar.Name]
		if c, ok := cs[name]; ok {
			applyContainer(&found[i], c)
			used[name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cs)) {
		c := cs[name]
		if used[name] {
			continue
		}
		if prof := containerProfile(c); prof != "" {
			f := Found{Why: "container " + name}
			f.Sidecar, _ = sidecar.Profile(prof)
			applyContainer(&f, c)
			found = append(found, f)
		}
	}
	return found
}

// containerProfile recognises a sidecar container by its name or image.
func containerProfile(c container) string {
	for prof, name := range sidecarContainers {
		if c.Name == name && prof != "osm" { // a container named envoy is not always OSM's
			return prof
		}
	}
	image := strings.ToLower(c.Image)
	switch {
	case strings.Contains(image, "cloud-sql-proxy"), strings.Contains(image, "cloudsql-proxy"), strings.Contains(image, "cloud_sql_proxy"):
		return "cloudsql"
	case c.Name == "envoy" && strings.Contains(image, "appmesh"):
		return "appmesh"
	}
	return ""
}

// applyContainer records what the container says: native or not, a startup probe, and for
// the Cloud SQL Auth Proxy its flags.
func applyContainer(f *Found, c container) {
	f.Sidecar.Native = f.Sidecar.Native || c.native
	f.Sidecar.StartupProbe = c.native && c.StartupProbe != nil
	if f.Sidecar.Name == "cloudsql" {
		cloudSQLFlags(f, append(c.Command, c.Args...))
	}
}

// cloudSQLFlags reads the proxy's flags: its health checks and quit endpoint exist only when
// enabled, on ports that flags may change (sidecar-protocols.md 8).
func cloudSQLFlags(f *Found, args []string) {
	if _, on := flagValue(args, "health-check"); !on {
		f.Sidecar.Ready = nil
		f.Notes = append(f.Notes, "the Cloud SQL Auth Proxy runs without --health-check: nothing to wait for")
	} else if p, ok := flagValue(args, "http-port"); ok {
		f.Sidecar = f.Sidecar.WithPorts(atoi(p), 0)
	}
	if _, on := flagValue(args, "quitquitquit"); !on {
		f.Sidecar.Quit = nil
		f.Notes = append(f.Notes, "the Cloud SQL Auth Proxy runs without --quitquitquit: it cannot be told to quit")
	} else if p, ok := flagValue(args, "admin-port"); ok {
		f.Sidecar = f.Sidecar.WithPorts(0, atoi(p))
	}
}

// flagValue finds --name, --name=V or --name V (also with one dash) in args. A boolean flag
// given as --name=false counts as absent.
func flagValue(args []string, name string) (string, bool) {
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
