package main

import (
	"fmt"
	"io"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sidesync/sidesync/internal/shared/buildinfo"
)

// newKubeFlags are the connection flags, kubectl's, but for --request-timeout's default: 30s
// (kubectl's is 0, none), since a stalled connection must not hold rescue or lint; 0 is none.
func newKubeFlags() *genericclioptions.ConfigFlags {
	kube := genericclioptions.NewConfigFlags(true)
	*kube.Timeout = "30s"
	return kube
}

// kubeClient connects as kubectl does, through the connection flags every kubectl plugin gets
// (--kubeconfig, else $KUBECONFIG, else ~/.kube/config; --context, --cluster, --user,
// --request-timeout, ...), and returns the namespace: -n, else the context's, else default.
// The API server's warnings (Pod Security's, say) go to stderr, as kubectl shows them.
func kubeClient(kube *genericclioptions.ConfigFlags, build buildinfo.Info, stderr io.Writer) (kubernetes.Interface, string, error) {
	rc, err := kube.ToRESTConfig()
	if err != nil {
		return nil, "", fmt.Errorf("reading the kubeconfig: %w", err)
	}
	namespace, _, err := kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("reading the kubeconfig: %w", err)
	}
	rc.UserAgent = "kubectl-sidesync/" + build.Version
	rc.QPS, rc.Burst = 50, 100 // kubectl's own limits; client-go's 5/s would slow -A
	rc.WarningHandler = rest.NewWarningWriter(stderr, rest.WarningWriterOptions{Deduplicate: true})
	client, err := kubernetes.NewForConfig(rc)
	return client, namespace, err
}
