package main

import (
	"context"
	"errors"

	"github.com/sidesync/sidesync/internal/cluster/lint"
)

// readCluster reads the Jobs and CronJobs of -n's namespace (the context's without it), or of
// every namespace with -A, and their namespaces' labels.
func readCluster(ctx context.Context, cfg lintConfig, e env) ([]lint.Object, error) {
	if _, _, err := kubeClient(cfg.kube, e.build, e.stderr); err != nil {
		return nil, err
	}
	return nil, errors.New("reading the cluster is not built yet: give the manifests with -f")
}
