// Package live reads what runs in a cluster for lint, as istioctl analyze looks at a cluster
// rather than at files: the Jobs and CronJobs of one namespace or of all, with what their
// namespaces ask the meshes' injectors for. A namespace labelled istio-injection=enabled gives
// every pod created in it Istio's sidecar, which no manifest shows and offline lint cannot see;
// read here, the namespace's requests are added to the pods (lint.InNamespace, the rule the
// webhook's warnings use too), and lint then says what the mesh's sidecar will do.
//
// Its permissions are deploy/lint/role.yaml.
package live

import (
	"cmp"
	"context"
	"fmt"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sidesync/sidesync/internal/cluster/lint"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// PageSize is how many objects one list request asks for: a cluster may have thousands of
// Jobs, which are read page by page (continue tokens) rather than in one answer.
const PageSize = 500

// NamespacesUnread is the error Read returns, together with every object it read, when it may
// read the Jobs and CronJobs but not their namespaces (forbidden): the objects are linted
// without what their namespaces ask for. A caller prints it as a warning and goes on:
//
//	objs, err := live.Read(ctx, c, ns)
//	var unread *live.NamespacesUnread
//	if errors.As(err, &unread) { warn(unread); err = nil }
type NamespacesUnread struct {
	Err error // the API server's answer
}

func (e *NamespacesUnread) Error() string {
	return e.Err.Error() + "; linted without the meshes their namespaces ask for (deploy/lint/role.yaml has the rights)"
}

func (e *NamespacesUnread) Unwrap() error { return e.Err }

// Read returns the Jobs and CronJobs of namespace (all namespaces when namespace is ""), as lint reads them,
// with the requests of the meshes their namespace asks for (its labels and annotations) added to their pods.
//
// The objects come sorted by namespace, then kind and name, each with its Namespace (and, for a
// mesh its namespace asks for, FromNamespace) set. A Job that a CronJob read here created (its
// controller) is left out: its pod is the CronJob's, and its findings would repeat the
// CronJob's. Every list is paged (PageSize) and bounded by ctx
// alone. The namespaces are read once (a get for one, a list for all). An error names what
// failed ("listing Jobs in team-a: ..."); when only the namespaces are forbidden, Read returns
// the objects, linted without their namespaces' requests, and a *NamespacesUnread.
func Read(ctx context.Context, c kubernetes.Interface, namespace string) ([]lint.Object, error) {
	return read(ctx, c, namespace, PageSize)
}

// read is Read with pages of pageSize objects.
func read(ctx context.Context, c kubernetes.Interface, namespace string, pageSize int64) ([]lint.Object, error) {
	namespaces, nsErr := readNamespaces(ctx, c, namespace, pageSize)
	if nsErr != nil && !apierrors.IsForbidden(nsErr) {
		return nil, nsErr
	}
	jobs, err := list[batchv1.Job](ctx, "Jobs", namespace, pageSize, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.BatchV1().Jobs(namespace).List(ctx, o)
	})
	if err != nil {
		return nil, err
	}
	cronJobs, err := list[batchv1.CronJob](ctx, "CronJobs", namespace, pageSize, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.BatchV1().CronJobs(namespace).List(ctx, o)
	})
	if err != nil {
		return nil, err
	}
	objs, err := objects(jobs, cronJobs, namespaces)
	if err != nil {
		return nil, err
	}
	if nsErr != nil {
		return objs, &NamespacesUnread{Err: nsErr}
	}
	return objs, nil
}

// objects are the Jobs and CronJobs as lint reads them, sorted, a CronJob's own Jobs left out.
func objects(jobs []batchv1.Job, cronJobs []batchv1.CronJob, namespaces map[string]*corev1.Namespace) ([]lint.Object, error) {
	read := map[string]bool{} // "namespace/name" of each CronJob read
	var objs []lint.Object
	for i := range cronJobs {
		cj := &cronJobs[i]
		read[cj.Namespace+"/"+cj.Name] = true
		o, err := objectOf(cj, manifest.CronJob, cj.Namespace, namespaces[cj.Namespace])
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
	for i := range jobs {
		j := &jobs[i]
		if owner := metav1.GetControllerOf(j); owner != nil && owner.Kind == string(manifest.CronJob) && read[j.Namespace+"/"+owner.Name] {
			continue
		}
		o, err := objectOf(j, manifest.Job, j.Namespace, namespaces[j.Namespace])
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
	slices.SortStableFunc(objs, func(a, b lint.Object) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return objs, nil
}

// objectOf is a typed Job or CronJob as lint reads it: the decoded JSON of a manifest
// (manifest.ObjectOf), its apiVersion and kind set (the items of a typed list have none), in
// its namespace (nil: not read, nothing asked).
func objectOf(typed any, kind manifest.Kind, namespace string, ns *corev1.Namespace) (lint.Object, error) {
	tm := manifest.TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: string(kind)}
	obj, err := manifest.ObjectOf(typed)
	if err != nil {
		return lint.Object{}, fmt.Errorf("reading %s in %s: %w", kind, namespace, err)
	}
	obj["apiVersion"], obj["kind"] = tm.APIVersion, tm.Kind
	var from map[string]string
	if ns != nil {
		obj, from = lint.InNamespace(obj, tm, ns.Annotations, ns.Labels)
	}
	w, err := manifest.Locate(obj, tm)
	if err == nil && w == nil {
		err = fmt.Errorf("not a %s", kind) // cannot happen: tm is one lint reads
	}
	if err != nil {
		return lint.Object{}, fmt.Errorf("reading %s in %s: %w", manifest.Name(obj, tm), namespace, err)
	}
	o, err := lint.FromWorkload(w)
	if err != nil {
		return lint.Object{}, fmt.Errorf("reading %s in %s: %w", w.Name, namespace, err)
	}
	o.Namespace, o.FromNamespace = namespace, from
	return o, nil
}

// readNamespaces reads namespace, or every namespace when it is "", by name.
func readNamespaces(ctx context.Context, c kubernetes.Interface, namespace string, pageSize int64) (map[string]*corev1.Namespace, error) {
	if namespace != "" {
		ns, err := c.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading namespace %s: %w", namespace, err)
		}
		return map[string]*corev1.Namespace{namespace: ns}, nil
	}
	all, err := list[corev1.Namespace](ctx, "namespaces", "", pageSize, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Namespaces().List(ctx, o)
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]*corev1.Namespace, len(all))
	for i := range all {
		out[all[i].Name] = &all[i]
	}
	return out, nil
}

// list reads every page of a list of what in namespace ("": all namespaces; namespaces
// themselves have none), pageSize items at a time, with client-go's pager: a continue token
// that expired while it read is answered by one full list, as the pager does.
func list[T any](ctx context.Context, what, namespace string, pageSize int64, page pager.ListPageFunc) ([]T, error) {
	where := ""
	switch {
	case what == "namespaces":
	case namespace == "":
		where = " in all namespaces"
	default:
		where = " in " + namespace
	}
	p := pager.New(page)
	p.PageSize = pageSize
	var all []T
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
		item, ok := any(o).(*T)
		if !ok {
			return fmt.Errorf("an item of type %T", o)
		}
		all = append(all, *item)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s%s: %w", what, where, err)
	}
	return all, nil
}
