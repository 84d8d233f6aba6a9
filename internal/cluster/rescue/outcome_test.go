package rescue_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/sidesync/sidesync/internal/cluster/rescue"
)

// rescued is a pod stuck on Istio's proxy and on a log shipper named for a signal, the decision
// on it, and the pod once the decision's containers were added, as later calls see it: the
// statuses say how each stands.
func rescued(t *testing.T) (*corev1.Pod, rescue.Decision) {
	t.Helper()
	pod := newPod(app(0), istio(running()), fluentBit(running()))
	d := rescue.Decide(pod, rescue.Options{Image: image, Now: now, Signal: []string{"fluent-bit"}})
	if d.Verdict != rescue.Stuck || len(d.Add) != 2 {
		t.Fatalf("Decide: %s %s (%s), %d containers to add", d.Verdict, d.Refusal, d.Reason, len(d.Add))
	}
	pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, d.Add...)
	return pod, d
}

// set sets the state of the container called name, regular or ephemeral, adding its status when
// it has none.
func set(pod *corev1.Pod, name string, st corev1.ContainerState) {
	for _, sts := range []*[]corev1.ContainerStatus{&pod.Status.ContainerStatuses, &pod.Status.EphemeralContainerStatuses} {
		for i := range *sts {
			if (*sts)[i].Name == name {
				(*sts)[i].State = st
				return
			}
		}
	}
	pod.Status.EphemeralContainerStatuses = append(pod.Status.EphemeralContainerStatuses, status(name, image, st))
}

func TestOutcome(t *testing.T) {
	const quit, signal = "sidesync-rescue-1", "sidesync-rescue-1-signal-fluent-bit"
	killed := exited(137)
	killed.Terminated.Signal = 9
	tests := []struct {
		name   string
		change func(*corev1.Pod)
		d      func(rescue.Decision) rescue.Decision
		want   rescue.Result
	}{
		{name: "just added: no status yet", change: func(*corev1.Pod) {},
			want: rescue.Result{Phase: corev1.PodRunning, Sidecars: map[string]int32{},
				Rescuers: map[string]string{quit: "has no status yet", signal: "has no status yet"}}},
		{name: "one runs, one waits for its image", change: func(p *corev1.Pod) {
			set(p, quit, running())
			set(p, signal, waiting("ImagePullBackOff"))
		}, want: rescue.Result{Phase: corev1.PodRunning, Sidecars: map[string]int32{},
			Rescuers: map[string]string{quit: "running", signal: "waiting (ImagePullBackOff)"},
			Failed:   signal + " never starts (ImagePullBackOff)"}},
		{name: "one is being created", change: func(p *corev1.Pod) {
			set(p, quit, running())
			set(p, signal, waiting("ContainerCreating"))
		}, want: rescue.Result{Phase: corev1.PodRunning, Sidecars: map[string]int32{},
			Rescuers: map[string]string{quit: "running", signal: "waiting (ContainerCreating)"}}},
		{name: "the sidecars ended, the pod not yet", change: func(p *corev1.Pod) {
			set(p, quit, exited(0))
			set(p, signal, exited(0))
			set(p, "istio-proxy", exited(0))
			set(p, "fluent-bit", exited(143))
		}, want: rescue.Result{Phase: corev1.PodRunning, Sidecars: map[string]int32{"istio-proxy": 0, "fluent-bit": 143},
			Rescuers: map[string]string{quit: "exited 0", signal: "exited 0"}}},
		{name: "done: Succeeded", change: func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodSucceeded
			set(p, quit, exited(0))
			set(p, signal, exited(0))
			set(p, "istio-proxy", exited(0))
			set(p, "fluent-bit", exited(0))
		}, want: rescue.Result{Phase: corev1.PodSucceeded, Done: true, Sidecars: map[string]int32{"istio-proxy": 0, "fluent-bit": 0},
			Rescuers: map[string]string{quit: "exited 0", signal: "exited 0"}}},
		{name: "done: Failed, with a target still running", change: func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			set(p, quit, exited(1))
			set(p, signal, exited(0))
		}, want: rescue.Result{Phase: corev1.PodFailed, Done: true, Sidecars: map[string]int32{},
			Rescuers: map[string]string{quit: "exited 1", signal: "exited 0"}}},
		{name: "failed: the rescuers ended and a target runs", change: func(p *corev1.Pod) {
			set(p, quit, exited(1))
			set(p, signal, exited(0))
			set(p, "fluent-bit", exited(0))
		}, want: rescue.Result{Phase: corev1.PodRunning, Sidecars: map[string]int32{"fluent-bit": 0},
			Rescuers: map[string]string{quit: "exited 1", signal: "exited 0"},
			Failed:   "the rescue containers ended and istio-proxy still runs"}},
		{name: "failed: both targets run, one restarted", change: func(p *corev1.Pod) {
			set(p, quit, killed)
			set(p, signal, exited(0))
			lastExit("fluent-bit", 143)(p)
		}, want: rescue.Result{Phase: corev1.PodRunning, Sidecars: map[string]int32{},
			Rescuers: map[string]string{quit: "exited 137 (signal 9)", signal: "exited 0"},
			Failed:   "the rescue containers ended and istio-proxy, fluent-bit still run"}},
		// The quit was taken: the sidecar is ending, or its exit is not in the status yet.
		{name: "not failed: the rescuers exited 0, a target still runs", change: func(p *corev1.Pod) {
			set(p, quit, exited(0))
			set(p, signal, exited(0))
			set(p, "fluent-bit", exited(0))
		}, want: rescue.Result{Phase: corev1.PodRunning, Sidecars: map[string]int32{"fluent-bit": 0},
			Rescuers: map[string]string{quit: "exited 0", signal: "exited 0"}}},
		{name: "not failed while a rescuer runs", change: func(p *corev1.Pod) {
			set(p, quit, exited(0))
			set(p, signal, running())
			set(p, "istio-proxy", exited(0))
		}, want: rescue.Result{Phase: corev1.PodRunning, Sidecars: map[string]int32{"istio-proxy": 0},
			Rescuers: map[string]string{quit: "exited 0", signal: "running"}}},
		// A decision that added nothing (in flight, grace, left) has no rescuer that could
		// have failed.
		{name: "a decision without containers never failed", change: func(p *corev1.Pod) {},
			d: func(d rescue.Decision) rescue.Decision {
				d.Verdict, d.Add, d.Attempt = rescue.InFlight, nil, 0
				return d
			}, want: rescue.Result{Phase: corev1.PodRunning, Sidecars: map[string]int32{}, Rescuers: map[string]string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod, d := rescued(t)
			tt.change(pod)
			if tt.d != nil {
				d = tt.d(d)
			}
			if diff := cmp.Diff(tt.want, rescue.Outcome(pod, d)); diff != "" {
				t.Errorf("Outcome (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPatch(t *testing.T) {
	pod, d := rescued(t)
	pod.Spec.EphemeralContainers = nil
	got, err := rescue.Patch(d.Add)
	if err != nil {
		t.Fatal(err)
	}
	// What `kubectl debug` sends to the ephemeralcontainers subresource.
	const want = `{"spec":{"ephemeralContainers":[` +
		`{"name":"sidesync-rescue-1","image":"` + image + `","command":["/sidesync","quit","--sidecar","istio"],"resources":{},` +
		`"securityContext":{"capabilities":{"drop":["ALL"]},"runAsNonRoot":true,"readOnlyRootFilesystem":true,"allowPrivilegeEscalation":false,"seccompProfile":{"type":"RuntimeDefault"}}},` +
		`{"name":"sidesync-rescue-1-signal-fluent-bit","image":"` + image + `","command":["/sidesync","signal","TERM"],"resources":{},` +
		`"securityContext":{"capabilities":{"drop":["ALL"]},"runAsUser":1000,"runAsGroup":2000,"runAsNonRoot":true,"readOnlyRootFilesystem":true,"allowPrivilegeEscalation":false,"seccompProfile":{"type":"RuntimeDefault"}},` +
		`"targetContainerName":"fluent-bit"}]}}`
	if string(got) != want {
		t.Errorf("Patch:\n got %s\nwant %s", got, want)
	}

	original, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	once := applyPatch(t, original, got)
	twice := applyPatch(t, once, got)
	if diff := cmp.Diff(decodePod(t, once), decodePod(t, twice)); diff != "" {
		t.Errorf("the patch applied twice changed the pod again (-once +twice):\n%s", diff)
	}
	if diff := cmp.Diff(d.Add, decodePod(t, once).Spec.EphemeralContainers); diff != "" {
		t.Errorf("ephemeral containers after the patch (-want +got):\n%s", diff)
	}
	want1 := decodePod(t, original)
	want1.Spec.EphemeralContainers = d.Add
	if diff := cmp.Diff(want1, decodePod(t, once)); diff != "" {
		t.Errorf("the patch changed more than the ephemeral containers (-want +got):\n%s", diff)
	}
}

// TestPatchNextAttempt: the patch of attempt 2 keeps attempt 1, which can be neither changed nor
// removed, and is idempotent too.
func TestPatchNextAttempt(t *testing.T) {
	first := exited(1)
	pod := newPod(app(0), istio(running()), rescuer("sidesync-rescue-1", &first))
	d := rescue.Decide(pod, rescue.Options{Image: image, Now: now})
	if d.Verdict != rescue.Stuck || d.Attempt != 2 {
		t.Fatalf("Decide: %s %s attempt %d", d.Verdict, d.Reason, d.Attempt)
	}
	patch, err := rescue.Patch(d.Add)
	if err != nil {
		t.Fatal(err)
	}
	original, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	once := applyPatch(t, original, patch)
	twice := applyPatch(t, once, patch)
	if string(once) != string(twice) {
		t.Errorf("applied twice:\n%s\nonce:\n%s", twice, once)
	}
	// A strategic merge lists the patch's new items first; rescue reads ephemeral containers by
	// name, never by position.
	var names []string
	for _, c := range decodePod(t, twice).Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"sidesync-rescue-1", "sidesync-rescue-2"}, names); diff != "" {
		t.Errorf("ephemeral containers (-want +got):\n%s", diff)
	}
}

// TestPatchNothing: a patch of no container would be {"ephemeralContainers": null}, which a
// strategic-merge patch reads as "delete the list".
func TestPatchNothing(t *testing.T) {
	for _, add := range [][]corev1.EphemeralContainer{nil, {}} {
		if got, err := rescue.Patch(add); err == nil {
			t.Errorf("Patch(%#v) = %s, want an error", add, got)
		}
	}
}

// applyPatch applies a strategic-merge patch to a pod as the API server does.
func applyPatch(t *testing.T, pod, patch []byte) []byte {
	t.Helper()
	out, err := strategicpatch.StrategicMergePatch(pod, patch, corev1.Pod{})
	if err != nil {
		t.Fatalf("StrategicMergePatch: %v", err)
	}
	return out
}

func decodePod(t *testing.T, b []byte) *corev1.Pod {
	t.Helper()
	var p corev1.Pod
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}
