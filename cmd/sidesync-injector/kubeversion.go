package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sidesync/sidesync/internal/cluster/inject"
	"github.com/sidesync/sidesync/internal/cluster/kubeversion"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// exitRefused is the injector's exit code when the cluster lacks what its flags need (sysexits'
// EX_CONFIG): it never serves, so its readiness never turns true, and its pod restarts
// (CrashLoopBackOff) with the reason in its log. docs/INSTALL.md lists it.
const exitRefused = 78

// errRefused marks a cluster that lacks what the injector's flags need, as against a check
// that could not be made.
var errRefused = errors.New("refused")

// checkTimeout bounds the checks at the start: two requests to the API server.
const checkTimeout = 30 * time.Second

// checkCluster checks, before the injector serves, that the cluster keeps what its pods will
// rely on. With image-volume delivery, a wrapped pod's command is the binary in an image volume:
// an API server without image volumes (before 1.35, or with the ImageVolume gate off) stores the
// pod without the volume or its mount, and says nothing (docs/KUBERNETES.md section 4), so every
// pod would fail to start with a message that names neither. It reads the server's version
// (discovery), and then dry-run creates in namespace a small pod wrapped as the webhook wraps
// pods, and reads what the server would store: the volume must still be there. A webhook or
// policy that strips the volume is caught the same way.
func checkCluster(ctx context.Context, client kubernetes.Interface, namespace string, o inject.Options) error {
	if o.Delivery != inject.ImageVolume {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	info, err := client.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("reading the API server's version: %w", err)
	}
	v, err := kubeversion.FromServer(info.Major, info.Minor)
	if err != nil {
		return err
	}
	f := kubeversion.ImageVolume
	if !f.In(v) {
		return fmt.Errorf("%w: --delivery %s needs %s, which need Kubernetes %s or newer, and the API server is %s: use --delivery %s (the chart's delivery: %s), or upgrade the cluster",
			errRefused, inject.ImageVolume, f.Name, f.Since, info.GitVersion, inject.InitCopy, inject.InitCopy)
	}
	pod, err := checkPod(o)
	if err != nil {
		return err
	}
	raw, err := client.CoreV1().RESTClient().Post().Namespace(namespace).Resource("pods").
		Param("dryRun", "All").Body(pod).Do(ctx).Raw()
	if err != nil {
		return fmt.Errorf("dry-run creating a pod with an image volume in namespace %s (the chart's Role *-image-volume-check lets the injector create pods there): %w",
			namespace, err)
	}
	var stored corev1.Pod
	if err := json.Unmarshal(raw, &stored); err != nil {
		return fmt.Errorf("the API server's answer to the dry run: %w", err)
	}
	if !keepsImageVolume(&stored) {
		return fmt.Errorf("%w: --delivery %s: the API server (%s) stores a pod without its image volume %s or its mount: the ImageVolume feature gate is off, or an admission webhook or policy removes it, and wrapped pods would not start: use --delivery %s, or turn image volumes on",
			errRefused, inject.ImageVolume, info.GitVersion, contract.BinVolume, inject.InitCopy)
	}
	return nil
}

// checkPod is a pod of one app container wrapped with o (image-volume delivery) as the webhook
// wraps pods, that the restricted Pod Security Standard admits, with requests and limits for a
// namespace whose ResourceQuota asks for them; it is only ever dry-run created.
func checkPod(o inject.Options) ([]byte, error) {
	restricted := map[string]any{"runAsNonRoot": true, "runAsUser": 65532, "allowPrivilegeEscalation": false,
		"capabilities": map[string]any{"drop": []any{"ALL"}}, "seccompProfile": map[string]any{"type": "RuntimeDefault"}}
	small := map[string]any{"cpu": "10m", "memory": "16Mi"}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"generateName": "sidesync-image-volume-check-"},
		"spec": map[string]any{"restartPolicy": "Never", "automountServiceAccountToken": false,
			"containers": []any{map[string]any{"name": "check", "image": o.Image, "command": []any{"/check"},
				"securityContext": restricted, "resources": map[string]any{"requests": small, "limits": small}}}}}
	out, r, err := inject.Apply(pod, manifest.TypeMeta{}, o, nil)
	if err != nil {
		return nil, fmt.Errorf("wrapping the check's pod: %w", err)
	}
	if !r.Changed {
		return nil, fmt.Errorf("wrapping the check's pod: left as it is (%s)", r.Reason)
	}
	return json.Marshal(out)
}

// keepsImageVolume reports whether pod has contract.BinVolume as an image volume, mounted in each
// container that runs sidesync from it.
func keepsImageVolume(pod *corev1.Pod) bool {
	ok := false
	for _, v := range pod.Spec.Volumes {
		if v.Name == contract.BinVolume && v.Image != nil {
			ok = true
		}
	}
	for _, c := range pod.Spec.Containers {
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || m.Name == contract.BinVolume
		}
		ok = ok && mounted
	}
	return ok && len(pod.Spec.Containers) > 0
}
