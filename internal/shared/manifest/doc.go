// Package manifest is the one way sidesync reads a Kubernetes object that makes pods: which
// kinds and API versions it handles and where their pod is (Locate), how a List's items are
// walked (Items), and one view of a pod and its containers (ReadPod) that detection, inject and
// lint all read. It works on decoded JSON as internal/shared/jsonlite decodes it
// (map[string]any, []any, string, bool, encoding/json's Number, nil), never on typed structs,
// so that it reads a Pod from the Kubernetes API in the pod binary as well as a manifest in
// kubectl-sidesync, and so that fields it does not know survive in the object. It is pure and
// uses the standard library only.
package manifest
