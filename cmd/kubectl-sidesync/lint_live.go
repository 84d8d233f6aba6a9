package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/sidesync/sidesync/internal/cluster/lint"
	"github.com/sidesync/sidesync/internal/cluster/lint/live"
)

// readCluster reads the Jobs and CronJobs of -n's namespace (the context's without it), or of
// every namespace with -A, with what their namespaces ask the meshes for (live.Read). Namespaces
// it may not read are a warning on stderr: the objects are linted without their requests.
func readCluster(ctx context.Context, cfg lintConfig, e env) ([]lint.Object, error) {
	client, namespace, err := kubeClient(cfg.kube, e.build, e.stderr)
	if err != nil {
		return nil, err
	}
	if cfg.all {
		namespace = ""
	}
	objs, err := live.Read(ctx, client, namespace)
	var unread *live.NamespacesUnread
	if errors.As(err, &unread) {
		fmt.Fprintf(e.stderr, "kubectl sidesync lint: warning: %v\n", unread)
		err = nil
	}
	return objs, err
}
