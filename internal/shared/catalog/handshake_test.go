package catalog

import (
	"testing"

	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// TestHandshakeQuit: a sidecar started by a shell's -c whose script kills, traps, or watches a
// file on a volume an app mounts too ends by a shutdown of its own; anything else is not one.
func TestHandshakeQuit(t *testing.T) {
	shared := []any{map[string]any{"name": "pod", "mountPath": "/tmp/pod/"}}
	for _, tc := range []struct {
		name    string
		command []string
		args    []string
		mounts  []any
		want    bool
	}{
		{"kills its child", []string{"/bin/sh", "-c"}, []string{"proxy & CHILD=$!; wait_for_it; kill $CHILD"}, nil, true},
		{"traps", []string{"bash", "-ec", "trap 'exit 0' TERM; proxy"}, nil, nil, true},
		{"watches a shared file", []string{"sh", "-c", "proxy & while ! test -f /tmp/pod/terminated; do sleep 1; done"}, nil, shared, true},
		{"a file on its own volume", []string{"sh", "-c", "proxy & while ! test -f /tmp/own/done; do sleep 1; done"}, nil, shared, false},
		{"a path that only starts the same", []string{"sh", "-c", "proxy --dir /tmp/podcast"}, nil, shared, false},
		{"a shell that only starts it", []string{"sh", "-c", "exec /cloud-sql-proxy p:r:i"}, nil, shared, false},
		{"a script file", []string{"sh", "/run.sh"}, []string{"kill"}, nil, false},
		{"no shell", []string{"/cloud-sql-proxy"}, []string{"--kill", "p:r:i"}, nil, false},
		{"words that only contain kill", []string{"sh", "-c", "skill_level=3 proxy"}, nil, nil, false},
	} {
		c := &manifest.Container{Name: "proxy", Command: tc.command, Args: tc.args, M: map[string]any{"volumeMounts": tc.mounts}}
		app := &manifest.Container{Name: "app", M: map[string]any{"volumeMounts": []any{map[string]any{"name": "pod", "mountPath": "/tmp/pod"}}}}
		pod := &manifest.PodView{Containers: []*manifest.Container{app, c}}
		why, got := HandshakeQuit(c, pod)
		if got != tc.want || got != (why != "") {
			t.Errorf("%s: HandshakeQuit = %q, %v; want %v", tc.name, why, got, tc.want)
		}
	}
}

// TestInjectorRecordWins: a pod that asked Istio for a native sidecar, whose Istio (too old for
// the request) recorded a classic one in its status annotation, has a classic sidecar.
func TestInjectorRecordWins(t *testing.T) {
	for status, want := range map[string]bool{
		`{"initContainers":["istio-init"],"containers":["istio-proxy"]}`: false,
		`{"initContainers":["istio-init","istio-proxy"]}`:                true,
	} {
		v := &manifest.PodView{Annotations: map[string]string{"sidecar.istio.io/status": status, "sidecar.istio.io/nativeSidecar": "true"}, Labels: map[string]string{}}
		p := Sort(v, Options{})
		if len(p.Sidecars) != 1 || p.Sidecars[0].Native != want {
			t.Errorf("status %s: sidecars %+v, want native %v", status, p.Sidecars, want)
		}
	}
}
