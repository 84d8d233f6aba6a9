package detect

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/sidesync/sidesync/internal/pod/httpc"
	"github.com/sidesync/sidesync/internal/shared/jsonlite"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// podLimit bounds the answer: a Pod is a few KiB, managed fields included.
const podLimit = 1 << 20

// errNoAPI says the Kubernetes API cannot be asked from here because this is not a Kubernetes
// pod (no KUBERNETES_SERVICE_HOST); it is not worth a warning.
var errNoAPI = errors.New("not in a Kubernetes pod")

// getPod reads the pod sidesync runs in from the Kubernetes API, with the service account's
// token and CA: GET /api/v1/namespaces/NS/pods/NAME, bounded by ctx.
func getPod(ctx context.Context, o Options) (*manifest.PodView, string, error) {
	host, hasHost := o.LookupEnv("KUBERNETES_SERVICE_HOST")
	if !hasHost || host == "" {
		return nil, "", errNoAPI
	}
	token, err := tokenFile.read(ctx, o.ServiceAccountDir)
	if err != nil {
		return nil, "", &NoTokenError{Dir: o.ServiceAccountDir, Err: err}
	}
	port, ok := o.LookupEnv("KUBERNETES_SERVICE_PORT")
	if !ok || port == "" {
		port = "443"
	}
	ns, name, err := podIdentity(ctx, o)
	where := ns + "/" + name
	if err != nil {
		return nil, where, err
	}
	dial, err := tlsDialer(ctx, o.ServiceAccountDir, host)
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
	p, err := readPod(resp.Body)
	if err != nil {
		return nil, where, fmt.Errorf("not a Pod: %w", err)
	}
	return p, where, nil
}

// podIdentity returns the pod's namespace and name: POD_NAMESPACE or the service account's
// namespace file, and POD_NAME or the host name (a pod's host name is its name unless
// spec.hostname says otherwise); or an error when it cannot tell, which says why the namespace
// file, when it was read, could not be.
func podIdentity(ctx context.Context, o Options) (ns, name string, err error) {
	var nsErr error
	ns, _ = o.LookupEnv("POD_NAMESPACE")
	if ns == "" {
		var b []byte
		b, nsErr = namespaceFile.read(ctx, o.ServiceAccountDir)
		ns = strings.TrimSpace(string(b))
	}
	name, _ = o.LookupEnv("POD_NAME")
	if name == "" {
		name, _ = o.LookupEnv("HOSTNAME")
	}
	if name == "" {
		name, _ = os.Hostname()
	}
	const cannot = "cannot tell the pod's namespace and name (set POD_NAMESPACE and POD_NAME from the downward API)"
	switch {
	case ns != "" && name != "":
		return ns, name, nil
	case nsErr != nil:
		return ns, name, fmt.Errorf(cannot+"; the service account's namespace file: %w", nsErr)
	}
	return ns, name, errors.New(cannot)
}

// readPod reads a Pod object as internal/shared/manifest reads every pod.
func readPod(body []byte) (*manifest.PodView, error) {
	v, err := jsonlite.Decode(body)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return manifest.ReadPod(obj, "")
}
