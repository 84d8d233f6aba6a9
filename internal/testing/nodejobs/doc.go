// Package nodejobs runs sidesync's claims about pods as real Jobs on a real node: kubelet,
// containerd and runc, started by internal/testing/kubetest in namespaces of their own. It has no code of
// its own but the stand-in program in ./app; its tests are the point:
//
//   - every example of deploy/examples, as written there and injected for an image volume,
//     completes; the plain manifest without sidesync stays Running with its app terminated;
//   - the sidecars a mesh's webhook adds after inject ran (a webhook the test registers, from the
//     catalog's container names and marks) are found through the downward API and through the
//     API, and told to quit by their protocol;
//   - restart rules, several apps, signals and native sidecars, as the README says;
//   - native conversion: each Job example under `kubectl sidesync inject --native always`
//     (converted, or the reason it is not), the real Cloud SQL Auth Proxy made native beside an
//     app with a command and one without, and the webhook's --native auto, which wraps a pod
//     that may land on a node whose kubelet is too old and converts it where it may not.
//
// The node's binaries are built by .ci/build-kube.sh; without them, or without root, the tests
// skip with one line saying why (they fail instead with SIDESYNC_NODE_REQUIRED=1, as in CI).
//
// The tests wait on the node far more than they compute, so TestMain runs 8 at once unless
// -test.parallel is given, builds the binaries while the node starts, imports every image and
// installs sidesync's policy once before the tests, and the tests wait on the API server's
// watches rather than polling it (docs/NODE.md, "Timings").
package nodejobs
