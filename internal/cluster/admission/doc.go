// Package admission is what sidesync's admission webhook (cmd/sidesync-injector), its Helm chart
// and the webhook-less policy share: which pods are selected (the labels, annotations and
// namespaces below), the webhook configurations themselves, and the handlers that answer the API
// server's AdmissionReview requests with the JSON Patch of internal/cluster/inject. It is the one home of
// these names: the chart's webhook templates and `kubectl sidesync policy` are generated from it.
package admission
