package detect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/sidesync/sidesync/internal/httpc"
)

// pod is the part of a Pod object that detection reads.
type pod struct {
	Metadata struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Annotations map[string]string `json:"annotations"`
		Labels      map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		RestartPolicy  string      `json:"restartPolicy"`
		Containers     []container `json:"containers"`
		InitContainers []container `json:"initContainers"`
	} `json:"spec"`
}

type container struct {
	Name          string           `json:"name"`
	Image         string           `json:"image"`
	Command       []string         `json:"command"`
	Args          []string         `json:"args"`
	RestartPolicy string           `json:"restartPolicy"`
	StartupProbe  *json.RawMessage `json:"startupProbe"`
	// RestartPolicyRules stay JSON here (restartOf reads them), so that rules sidesync cannot
	// read leave the restart unknown rather than fail the reading of the whole Pod.
	RestartPolicyRules json.RawMessage `json:"restartPolicyRules"`
	native             bool            // an init container with restartPolicy: Always
}

// podLimit bounds the answer: a Pod is a few KiB, managed fields included.
const podLimit = 1 << 20

// errNoAPI says the Kubernetes API cannot be asked from here because this is not a Kubernetes
// pod (no KUBERNETES_SERVICE_HOST); it is not worth a warning.
var errNoAPI = errors.New("not in a Kubernetes pod")

// getPod reads the pod sidesync runs in from the Kubernetes API, with the service account's
// token and CA: GET /api/v1/namespaces/NS/pods/NAME, bounded by ctx.
func getPod(ctx context.Context, o Options) (*pod, string, error) {
	host, hasHost := o.LookupEnv("KUBERNETES_SERVICE_HOST")
	if !hasHost || host == "" {
		return nil, "", errNoAPI
	}
	token, err := os.ReadFile(filepath.Join(o.ServiceAccountDir, "token"))
	if err != nil {
		return nil, "", &NoTokenError{Dir: o.ServiceAccountDir, Err: err}
	}
	port, ok := o.LookupEnv("KUBERNETES_SERVICE_PORT")
	if !ok || port == "" {
		port = "443"
	}
	ns, name := podIdentity(o)
	where := ns + "/" + name
	if ns == "" || name == "" {
		return nil, where, fmt.Errorf("cannot tell the pod's namespace and name (set POD_NAMESPACE and POD_NAME from the downward API)")
	}
	dial, err := tlsDialer(filepath.Join(o.ServiceAccountDir, "ca.crt"), host)
	if err != nil {
		return nil, where, err
	}
	u := &url.URL{Scheme: "https", Host: net.JoinHostPort(host, port), Path: "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods/" + url.PathEscape(name)}
	resp, err := httpc.Do(ctx, &httpc.Request{URL: u, Dial: dial, Header: []httpc.Header{
		{Name: "Authorization", Value: "Bearer " + strings.TrimSpace(string(token))},
		{Name: "Accept", Value: "application/json"},
	}}, podLimit)
	if err != nil {
		return nil, where, err
	}
	switch {
	case resp.StatusCode == 401 || resp.StatusCode == 403:
		saNS, sa := serviceAccountOf(string(token))
		return nil, where, &ForbiddenError{Status: resp.Status, Namespace: ns, Pod: name, AccountNamespace: saNS, Account: sa}
	case resp.StatusCode != 200:
		return nil, where, fmt.Errorf("%s: %.200s", resp.Status, resp.Body)
	case resp.Truncated || resp.BodyErr != nil:
		return nil, where, fmt.Errorf("incomplete answer: %v", resp.BodyErr)
	}
	var p pod
	if err := json.Unmarshal(resp.Body, &p); err != nil {
		return nil, where, fmt.Errorf("not a Pod: %w", err)
	}
	return &p, where, nil
}

// podIdentity returns the pod's namespace and name: POD_NAMESPACE or the service account's
// namespace file, and POD_NAME or the host name (a pod's host name is its name unless
// spec.hostname says otherwise).
func podIdentity(o Options) (ns, name string) {
	ns, _ = o.LookupEnv("POD_NAMESPACE")
	if ns == "" {
		b, _ := os.ReadFile(filepath.Join(o.ServiceAccountDir, "namespace"))
		ns = strings.TrimSpace(string(b))
	}
	name, _ = o.LookupEnv("POD_NAME")
	if name == "" {
		name, _ = o.LookupEnv("HOSTNAME")
	}
	if name == "" {
		name, _ = os.Hostname()
	}
	return ns, name
}

// containers returns the pod's containers and native sidecars by name.
func (p *pod) containers() map[string]container {
	m := make(map[string]container)
	for _, c := range p.Spec.Containers {
		m[c.Name] = c
	}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy == "Always" {
			c.native = true
			m[c.Name] = c
		}
	}
	return m
}
