//go:build linux

package nodejobs

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sidesync/sidesync/internal/buildinfo"
	"github.com/sidesync/sidesync/internal/image"
	"github.com/sidesync/sidesync/internal/kubetest"
)

// The node all tests of the package share, started by TestMain; or why there is none.
var (
	node    *kubetest.Node
	noNode  string // the machine cannot run a node: skip (fail with SIDESYNC_NODE_REQUIRED)
	nodeErr error  // it could, and failed: every test fails with it
	bins    string // the static binaries: sidesync, sidesync-emulator, kubectl-sidesync, app
)

// exampleVersion is the release the examples in deploy/examples name (their image's tag).
const exampleVersion = "v0.1.0"

// sidesyncImage is the image the examples name: the real release image, built by internal/image
// from this checkout's sidesync.
var sidesyncImage = buildinfo.ImageRepository + ":" + exampleVersion

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if noNode = kubetest.NodeUnavailable(); noNode != "" {
		return m.Run()
	}
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
	n, err := kubetest.StartNode(logf)
	if err != nil {
		nodeErr = err
		return m.Run()
	}
	node = n
	dir, err := os.MkdirTemp("", "nodejobs-")
	if err == nil {
		defer os.RemoveAll(dir)
		bins = dir
		err = setUp(dir)
	}
	if err != nil {
		nodeErr = err
	}
	code := m.Run()
	if err := n.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "nodejobs: the node left something behind: %v\n", err)
		return 1
	}
	return code
}

// testNode returns the shared node, or skips or fails the test.
func testNode(t *testing.T) *kubetest.Node {
	t.Helper()
	switch {
	case noNode != "" && kubetest.NodeRequired():
		t.Fatalf("nodejobs: %s; %s is set, so this is a failure", noNode, kubetest.EnvNodeRequired)
	case noNode != "":
		t.Skip("nodejobs: " + noNode)
	case nodeErr != nil:
		t.Fatalf("nodejobs: %v", nodeErr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node logs:%s", node.LogTails())
		}
	})
	return node
}

// setUp builds the binaries and imports the images every test uses: sidesync's release image
// as the examples name it, the sidecars' images and the examples' apps.
func setUp(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := kubetest.BuildStatic(ctx, dir,
		"github.com/sidesync/sidesync/cmd/sidesync",
		"github.com/sidesync/sidesync/cmd/sidesync-emulator",
		"github.com/sidesync/sidesync/cmd/kubectl-sidesync",
		"github.com/sidesync/sidesync/internal/nodejobs/app"); err != nil {
		return err
	}
	bin, err := os.ReadFile(filepath.Join(dir, "sidesync"))
	if err != nil {
		return err
	}
	release, err := image.NewImage(bin, v1.Platform{OS: "linux", Architecture: goarch()}, nil)
	if err != nil {
		return err
	}
	images := []kubetest.Image{{Ref: sidesyncImage, Raw: release}}
	images = append(images, sidecarImages(dir)...)
	images = append(images, appImages(dir)...)
	return node.ImportImages(ctx, images...)
}

// --- the API ----------------------------------------------------------------------------------

// namespace creates a namespace that enforces Pod Security "restricted", as users run it, and
// whose pods the mesh stand-in injects.
func namespace(t *testing.T, n *kubetest.Node, name string) {
	t.Helper()
	n.CreateNamespaceLabelled(t, name, map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
		injectorLabel:                        "on",
	})
	t.Cleanup(func() {
		n.Send(t, http.MethodDelete, "/api/v1/namespaces/"+name, nil)
	})
}

// pod is what the tests read of a Pod.
type pod struct {
	Metadata struct {
		Name        string
		Annotations map[string]string
	}
	Spec struct {
		InitContainers []struct{ Name string }
		Containers     []struct{ Name string }
	}
	Status struct {
		Phase                 string
		ContainerStatuses     []containerStatus
		InitContainerStatuses []containerStatus
	}
}

type containerStatus struct {
	Name         string
	RestartCount int
	State        containerState
	LastState    containerState
}

type containerState struct {
	Running    *struct{ StartedAt string }
	Terminated *struct {
		ExitCode   int
		Reason     string
		Signal     int
		StartedAt  string
		FinishedAt string
	}
}

// status returns the named container's status, from the regular or the init containers.
func (p *pod) status(name string) *containerStatus {
	for _, list := range [][]containerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// jobPods returns the Job's pods.
func jobPods(t *testing.T, n *kubetest.Node, ns, job string) []pod {
	t.Helper()
	var list struct{ Items []pod }
	n.Do(t, http.MethodGet, "/api/v1/namespaces/"+ns+"/pods?labelSelector="+url.QueryEscape("batch.kubernetes.io/job-name="+job), nil, &list)
	return list.Items
}

// getPod returns a Pod.
func getPod(t *testing.T, n *kubetest.Node, ns, name string) pod {
	t.Helper()
	var p pod
	if code := n.Do(t, http.MethodGet, "/api/v1/namespaces/"+ns+"/pods/"+name, nil, &p); code != http.StatusOK {
		t.Fatalf("GET pod %s/%s: %d", ns, name, code)
	}
	return p
}

// waitPod waits until cond holds for the Pod, or fails the test after timeout.
func waitPod(t *testing.T, n *kubetest.Node, ns, name string, timeout time.Duration, what string, cond func(pod) bool) pod {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var p pod
		if n.Do(t, http.MethodGet, "/api/v1/namespaces/"+ns+"/pods/"+name, nil, &p) == http.StatusOK && cond(p) {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s/%s: not %s after %s: %s", ns, name, what, timeout, describe(p))
		}
		time.Sleep(200 * time.Millisecond) // polling the API for a state, bounded by the deadline
	}
}

// describe is a pod's phase and container states, for a failure message.
func describe(p pod) string {
	b, _ := json.Marshal(p.Status)
	return string(b)
}

// terminated checks that the container ended with code and returns its log (the runs the
// kubelet keeps: see kubetest.Node.PodLogs).
func terminated(t *testing.T, n *kubetest.Node, ns string, p pod, container string, code int) string {
	t.Helper()
	st := p.status(container)
	if st == nil || st.State.Terminated == nil {
		t.Fatalf("pod %s: container %s has not terminated: %s", p.Metadata.Name, container, describe(p))
	}
	if st.State.Terminated.ExitCode != code {
		t.Errorf("pod %s: container %s exited %d (%s), want %d", p.Metadata.Name, container,
			st.State.Terminated.ExitCode, st.State.Terminated.Reason, code)
	}
	return containerLog(t, n, ns, p.Metadata.Name, container)
}

// containerLog returns a container's log, from the kubelet's files (the runs it keeps).
func containerLog(t *testing.T, n *kubetest.Node, ns, pod, container string) string {
	t.Helper()
	logs, err := n.PodLogs(ns, pod, container)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(logs, "")
}

// mustContain checks that a log has a line that matches re.
func mustContain(t *testing.T, what, log, re string) {
	t.Helper()
	if !regexp.MustCompile(re).MatchString(log) {
		t.Errorf("%s: no line matches %s in:\n%s", what, re, log)
	}
}

// createYAML creates the Jobs and Pods of a YAML stream in ns (CronJobs are skipped: they would
// only run at their schedule), and returns the kinds and names created.
func createYAML(t *testing.T, n *kubetest.Node, ns string, stream []byte) [][2]string {
	t.Helper()
	var created [][2]string
	for _, doc := range splitYAML(stream) {
		obj := yamlToMap(t, doc)
		if obj == nil {
			continue
		}
		kind, _ := obj["kind"].(string)
		name, _ := obj["metadata"].(map[string]any)["name"].(string)
		switch kind {
		case "Job":
			n.Create(t, "/apis/batch/v1/namespaces/"+ns+"/jobs", obj)
		case "Pod":
			n.Create(t, "/api/v1/namespaces/"+ns+"/pods", obj)
		default:
			continue
		}
		created = append(created, [2]string{kind, name})
	}
	return created
}

// serviceAccounts creates the ServiceAccounts the stream's pods name.
func serviceAccounts(t *testing.T, n *kubetest.Node, ns string, stream []byte) {
	t.Helper()
	for _, m := range regexp.MustCompile(`(?m)serviceAccountName: *([a-z0-9-]+)`).FindAllSubmatch(stream, -1) {
		if name := string(m[1]); name != "default" && n.Send(t, http.MethodGet, "/api/v1/namespaces/"+ns+"/serviceaccounts/"+name, nil).Code == http.StatusNotFound {
			n.CreateServiceAccount(t, ns, name)
		}
	}
}

// contains reports whether list has s.
func contains(list []string, s string) bool { return slices.Contains(list, s) }
