package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sidesync/sidesync/internal/cluster/stream"
	rt "github.com/sidesync/sidesync/internal/testing/registrytest"
)

// resolveFixture serves two multi-platform images (each index with an attestation manifest)
// on loopback: same:1 runs the same argv on amd64 and arm64, differ:1 another ENTRYPOINT on
// arm64. It returns a Pod p that uses them, and a Pod q that uses missing:1, which the registry
// lacks.
func resolveFixture(t *testing.T) (pod, host string, same, differ v1.Hash) {
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // the default keychain, without the developer's credentials
	host = rt.Start(t)
	amd := rt.Platform{OS: "linux", Architecture: "amd64", Entrypoint: []string{"/srv"}, Cmd: []string{"--listen=$(ADDR)"}}
	arm := rt.Platform{OS: "linux", Architecture: "arm64", Variant: "v8", Entrypoint: []string{"/srv"}, Cmd: []string{"--listen=$(ADDR)"}}
	armOther := rt.Platform{OS: "linux", Architecture: "arm64", Variant: "v8", Entrypoint: []string{"/srv-arm64"}}
	same = rt.PushIndex(t, host+"/same:1", true, amd, arm)
	differ = rt.PushIndex(t, host+"/differ:1", true, amd, armOther)
	pod = `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  restartPolicy: Never
  containers:
  - {name: same, image: "` + host + `/same:1"}
  - {name: differ, image: "` + host + `/differ:1", args: [--verbose]}
  - {name: explicit, image: "` + host + `/missing:1", command: [run]}
---
apiVersion: v1
kind: Pod
metadata: {name: q}
spec:
  restartPolicy: Never
  containers:
  - {name: missing, image: "` + host + `/missing:1"}
  - {name: explicit, image: "` + host + `/missing:1", command: [run]}
`
	return pod, host, same, differ
}

// resolvedContainers runs inject and returns the containers of the Pods, p's then q's.
func resolvedContainers(t *testing.T, pod string, args ...string) (cs []map[string]any, stderr string) {
	t.Helper()
	code, stdout, stderr := injectRun(t, pod, append([]string{injectImage}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	docs, _, err := stream.Read(strings.NewReader(stdout))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		for _, c := range d.Object["spec"].(map[string]any)["containers"].([]any) {
			cs = append(cs, c.(map[string]any))
		}
	}
	return cs, stderr
}

// resolvedFlags are the wrapper's flags of container name of Pod p, which has three apps.
func resolvedFlags(name string) []any {
	return []any{"--pod-info=/sidesync/podinfo", "--state-dir=/sidesync/state", "--container=" + name, "--"}
}

// TestInjectResolve: with --resolve, a container without a command gets its image's argv,
// inlined when every platform agrees (escaped for kubelet) and per platform otherwise, and its
// image pinned to the index's digest; an image that cannot be read leaves its pod alone, every
// container of it, with warnings.
func TestInjectResolve(t *testing.T) {
	pod, host, same, differ := resolveFixture(t)
	cs, stderr := resolvedContainers(t, pod, "--resolve")
	if diff := cmp.Diff(append(resolvedFlags("same"), "/srv", "--listen=$$(ADDR)"), cs[0]["args"]); diff != "" {
		t.Errorf("same: args (-want +got):\n%s", diff)
	}
	if got, want := cs[0]["image"], host+"/same@"+same.String(); got != want {
		t.Errorf("same: image %v, want %s", got, want)
	}
	if diff := cmp.Diff(resolvedFlags("differ"), cs[1]["args"]); diff != "" {
		t.Errorf("differ: args (-want +got):\n%s", diff)
	}
	if got, want := cs[1]["image"], host+"/differ@"+differ.String(); got != want {
		t.Errorf("differ: image %v, want %s", got, want)
	}
	wantEnv := []any{
		map[string]any{"name": "SIDESYNC_PLATFORM_COMMANDS", "value": `{"linux/amd64":["/srv","--verbose"],"linux/arm64/v8":["/srv-arm64","--verbose"]}`},
		map[string]any{"name": "SIDESYNC_RESTART_POLICY", "value": "Never"},
	}
	if diff := cmp.Diff(wantEnv, cs[1]["env"]); diff != "" {
		t.Errorf("differ: env (-want +got):\n%s", diff)
	}
	for i, want := range []map[string]any{{"name": "missing", "image": host + "/missing:1"}, {"name": "explicit", "image": host + "/missing:1", "command": []any{"run"}}} {
		if diff := cmp.Diff(want, cs[3+i]); diff != "" {
			t.Errorf("q: changed (-want +got):\n%s", diff)
		}
	}
	for _, w := range []string{
		"kubectl sidesync inject: warning: cannot read the image " + host + "/missing:1 from its registry: ",
		"Pod/p: wrapped same, differ, explicit (init-copy)\n",
		"Pod/q: left unchanged (an app container cannot be wrapped); left missing (no command), explicit (not wrapped: another app of the pod cannot be)\n",
		"Pod/q: warning: container missing has no command",
	} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr does not say %q:\n%s", w, stderr)
		}
	}
}

// TestInjectResolvePlatform: --platform reads only the platforms asked for, which then agree.
func TestInjectResolvePlatform(t *testing.T) {
	pod, _, _, _ := resolveFixture(t)
	cs, _ := resolvedContainers(t, pod, "--resolve", "--platform=linux/amd64")
	if diff := cmp.Diff(append(resolvedFlags("differ"), "/srv", "--verbose"), cs[1]["args"]); diff != "" {
		t.Errorf("differ's args (-want +got):\n%s", diff)
	}
}

// TestInjectWithoutResolve: without --resolve, no registry is asked, and a pod with containers
// without a command is left alone, all of it.
func TestInjectWithoutResolve(t *testing.T) {
	pod, host, _, _ := resolveFixture(t)
	cs, stderr := resolvedContainers(t, pod)
	if !strings.Contains(stderr, "Pod/p: left unchanged (an app container cannot be wrapped); left same (no command), differ (no command), explicit (not wrapped: another app of the pod cannot be)\n") ||
		cs[0]["image"] != host+"/same:1" || cs[0]["args"] != nil {
		t.Errorf("stderr:\n%s\nsame: %v", stderr, cs[0])
	}
}
