package detect

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/sidesync/sidesync/internal/shared/jsonlite"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// ForbiddenError is the API server's 401 or 403 to the request for the pod: the service account
// may not get its own pod, which is the default for every service account in a cluster. Fix
// says exactly what to grant.
type ForbiddenError struct {
	Status           string // "403 Forbidden"
	Namespace, Pod   string
	AccountNamespace string // the service account, from the token; "" when unreadable
	Account          string
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("%s: the service account %s may not get its own pod %s/%s", e.Status, e.account(), e.Namespace, e.Pod)
}

func (e *ForbiddenError) account() string {
	if e.Account == "" {
		return "of this pod"
	}
	return e.AccountNamespace + ":" + e.Account
}

// RBACName is the name of the Role and RoleBinding that Fix suggests.
const RBACName = "sidesync-get-pods"

// Fix is the RBAC that lets detection work: a Role that may get pods in the namespace, bound to
// the pod's service account, as two kubectl commands.
func (e *ForbiddenError) Fix() string {
	ns, sa := e.Namespace, e.AccountNamespace+":"+e.Account
	if e.Account == "" {
		sa = ns + ":<the pod's serviceAccountName>"
	}
	return fmt.Sprintf("grant the pod's service account get on pods: kubectl create role %s --verb=get --resource=pods -n %s && "+
		"kubectl create rolebinding %s --role=%s --serviceaccount=%s -n %s; or name the sidecars with --sidecar, "+
		"or mount the pod's annotations with a downward-API volume at --pod-info", RBACName, ns, RBACName, RBACName, sa, ns)
}

// NoTokenError is a pod without a service-account token (automountServiceAccountToken: false).
type NoTokenError struct {
	Dir string
	Err error
}

func (e *NoTokenError) Error() string {
	return fmt.Sprintf("no service-account token in %s: %v", e.Dir, e.Err)
}

func (e *NoTokenError) Unwrap() error { return e.Err }

// Fix says how to let detection work without a token.
func (e *NoTokenError) Fix() string {
	return "name the sidecars with --sidecar, or mount the pod's annotations with a downward-API volume at --pod-info, " +
		"or mount a service-account token (automountServiceAccountToken: true) that may get the pod"
}

// fixFor is what to do about a failed look at the API.
func fixFor(err error) string {
	if f, ok := err.(interface{ Fix() string }); ok {
		return f.Fix()
	}
	return "name the sidecars with --sidecar, or mount the pod's annotations with a downward-API volume at --pod-info"
}

// serviceAccountOf reads the service account from a token's claims ("sub":
// "system:serviceaccount:NS:NAME"). The token is not verified: this only names the account in
// a message, and the API server has already judged the token.
func serviceAccountOf(token string) (namespace, name string) {
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 {
		return "", ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return "", ""
	}
	claims, err := jsonlite.Decode(payload)
	if err != nil {
		return "", ""
	}
	m, _ := claims.(map[string]any)
	rest, ok := strings.CutPrefix(manifest.Str(m, "sub"), "system:serviceaccount:")
	if !ok {
		return "", ""
	}
	namespace, name, _ = strings.Cut(rest, ":")
	return namespace, name
}
