//go:build linux

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidesync/sidesync/internal/cluster/rescue"
)

// testPolicy: the chart's ValidatingAdmissionPolicy lets the rescuer's service account add
// exactly what rescue.Decide adds, and nothing else; other users are not its business.
func testPolicy(t *testing.T, in *installed) {
	ctx := context.Background()
	in.c.CreateNamespace(t, "policy")
	pod := in.createPod(t, "policy", "job", nil)
	pod = in.setStatus(t, pod, corev1.PodRunning, time.Now().Add(-time.Hour), stuck, nil)
	d := rescue.Decide(pod, rescue.Options{Image: chartImage, Now: time.Now()})
	if d.Verdict != rescue.Stuck || len(d.Add) != 1 {
		t.Fatalf("Decide: %+v", d)
	}
	good := d.Add[0]
	add := func(client string, ec corev1.EphemeralContainer, dryRun bool) error {
		patch, err := rescue.Patch([]corev1.EphemeralContainer{ec})
		if err != nil {
			t.Fatal(err)
		}
		opts := metav1.PatchOptions{}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		cs := in.rescuer
		if client == "admin" {
			cs = in.admin
		}
		_, err = cs.CoreV1().Pods("policy").Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, opts, "ephemeralcontainers")
		return err
	}
	tokenVolume := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") {
			tokenVolume = v.Name
		}
	}
	if tokenVolume == "" {
		t.Fatal("the pod has no service account token volume to mount")
	}
	denied := []struct {
		name   string
		change func(*corev1.EphemeralContainer)
		want   string
	}{
		{"a shell image", func(c *corev1.EphemeralContainer) { c.Image = "docker.io/library/busybox:1.37" }, "its image must be " + chartImage},
		{"the image, with a shell", func(c *corev1.EphemeralContainer) { c.Command = []string{"sh"} }, "its command must be"},
		{"the image, quit with another flag", func(c *corev1.EphemeralContainer) {
			c.Command = append(c.Command, "--allow-remote-quit", "true")
		}, "its command must be"},
		{"a spec that is not a profile", func(c *corev1.EphemeralContainer) { c.Command[len(c.Command)-1] = "--help" }, "its command must be"},
		{"args", func(c *corev1.EphemeralContainer) { c.Args = []string{"sh"} }, "no args"},
		{"a target container", func(c *corev1.EphemeralContainer) { c.TargetContainerName = "istio-proxy" }, "targetContainerName"},
		{"a volume mount", func(c *corev1.EphemeralContainer) {
			c.VolumeMounts = []corev1.VolumeMount{{Name: tokenVolume, MountPath: "/token", ReadOnly: true}}
		}, "mount no volume"},
		{"another name", func(c *corev1.EphemeralContainer) { c.Name = "debugger" }, "its name must begin with " + rescue.ContainerPrefix},
		{"a variable", func(c *corev1.EphemeralContainer) {
			c.Env = []corev1.EnvVar{{Name: "HTTP_PROXY", Value: "http://example.com"}}
		}, "variables"},
		{"a credential the pod does not have", func(c *corev1.EphemeralContainer) {
			c.Env = []corev1.EnvVar{{Name: rescue.Credentials()[0], Value: "guess"}}
		}, "variables"},
		// (privileged: true is refused by this API server itself, which runs without
		// --allow-privileged.)
		{"privilege escalation", func(c *corev1.EphemeralContainer) {
			c.SecurityContext.AllowPrivilegeEscalation = &[]bool{true}[0]
		}, "securityContext"},
		{"user 0", func(c *corev1.EphemeralContainer) {
			c.SecurityContext.RunAsUser, c.SecurityContext.RunAsNonRoot = new(int64), nil
		}, "securityContext"},
		{"an added capability", func(c *corev1.EphemeralContainer) {
			c.SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_PTRACE"}
		}, "securityContext"},
	}
	for _, tc := range denied {
		t.Run("denied: "+tc.name, func(t *testing.T) {
			ec := *good.DeepCopy()
			tc.change(&ec)
			err := add("rescuer", ec, false)
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), rescue.PolicyMessage) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want Forbidden with %q: %q", err, rescue.PolicyMessage, tc.want)
			}
		})
	}
	t.Run("allowed: what Decide adds", func(t *testing.T) {
		if err := add("rescuer", good, false); err != nil {
			t.Fatalf("the rescue container was refused: %v", err)
		}
	})
	t.Run("another user: unaffected", func(t *testing.T) {
		shell := corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debugger", Image: "docker.io/library/busybox:1.37", Command: []string{"sh"}}, TargetContainerName: "istio-proxy"}
		if err := add("admin", shell, false); err != nil {
			t.Fatalf("the admin's debug container was refused: %v", err)
		}
	})
	t.Run("allowed: a second attempt beside others' containers", func(t *testing.T) {
		next := *good.DeepCopy()
		next.Name = rescue.ContainerPrefix + "2"
		if err := add("rescuer", next, true); err != nil {
			t.Fatalf("a second rescue container was refused: %v", err)
		}
	})
	t.Run("allowed: a credential copied from the sidecar", func(t *testing.T) {
		in.c.CreateNamespace(t, "policy-dapr")
		daprd := corev1.Container{Name: "daprd", Image: "docker.io/daprio/daprd:1.16.0", Args: []string{"./daprd"},
			Env: []corev1.EnvVar{{Name: "DAPR_API_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "dapr-api-token"}, Key: "token"}}}}}
		p := in.createPod(t, "policy-dapr", "job", []corev1.Container{daprd})
		p = in.setStatus(t, p, corev1.PodRunning, time.Now().Add(-time.Hour),
			[]state{{"main", "exited 0"}, {"istio-proxy", "running"}, {"daprd", "running"}}, nil)
		d := rescue.Decide(p, rescue.Options{Image: chartImage, Now: time.Now()})
		if d.Verdict != rescue.Stuck || len(d.Add) != 1 || len(d.Add[0].Env) != 1 {
			t.Fatalf("Decide: %+v", d)
		}
		patch, err := rescue.Patch(d.Add)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := in.rescuer.CoreV1().Pods("policy-dapr").Patch(ctx, p.Name, types.StrategicMergePatchType, patch,
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "ephemeralcontainers"); err != nil {
			t.Fatalf("the rescue container with Dapr's token was refused: %v", err)
		}
	})
	t.Run("denied: changing a container the pod has", func(t *testing.T) {
		// The API server refuses this for everyone (ephemeral containers are immutable); the
		// policy refuses it first for the rescuer.
		changed := *good.DeepCopy()
		changed.Command = append(changed.Command, "--sidecar", "vault")
		err := add("rescuer", changed, true)
		if err == nil {
			t.Fatal("a changed rescue container was allowed")
		}
		t.Logf("refused: %v", err)
	})
	stored := in.getPod(t, "policy", pod.Name)
	// A strategic merge patch puts what it adds first.
	if got := ephemeralNames(stored); !cmp.Equal(got, []string{good.Name, "debugger"}, cmpopts.SortSlices(func(a, b string) bool { return a < b })) {
		t.Errorf("ephemeral containers %q, want the rescue's and the admin's", got)
	}
}
