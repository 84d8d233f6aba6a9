package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/shared/buildinfo"
)

// execEnv, set in a child's environment, makes the test binary run as sidesync-rescuer: the
// tests start the controller as a real process, with its own metrics registry, signals and
// exit code.
const execEnv = "SIDESYNC_RESCUER_TEST_EXEC"

func TestMain(m *testing.M) {
	if os.Getenv(execEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

var devBuild = buildinfo.Info{Version: "(devel)", Commit: "unknown"}

// TestBadFlags: every bad command line exits 2 before connecting to anything, with a message
// that names the flag.
func TestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		build buildinfo.Info
		want  string
	}{
		{"no image in a development build", nil, devBuild, "--image is required"},
		{"image with a space", []string{"--image=a b"}, devBuild, "--image"},
		{"negative grace", []string{"--image=x", "--grace=-1s"}, devBuild, "--grace"},
		{"grace not a duration", []string{"--image=x", "--grace=30"}, devBuild, "-grace"},
		{"log format", []string{"--image=x", "--log-format=xml"}, devBuild, "--log-format"},
		{"leader election outside a pod without a namespace", []string{"--image=x", "--leader-elect", "--kubeconfig=/k"}, devBuild, "--leader-election-namespace"},
		{"no lease name", []string{"--image=x", "--leader-elect", "--leader-election-namespace=ns", "--leader-election-id="}, devBuild, "--leader-election-id"},
		{"one address for both", []string{"--image=x", "--metrics-bind-address=:9000", "--health-probe-bind-address=:9000"}, devBuild, "--metrics-bind-address"},
		{"an argument", []string{"--image=x", "extra"}, devBuild, `"extra"`},
		{"an unknown flag", []string{"--signal=istio-proxy"}, devBuild, "-signal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if code := run(ctx, tc.args, tc.build, &stderr); code != 2 {
				t.Errorf("exit %d, want 2; stderr:\n%s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) || !strings.HasPrefix(stderr.String(), "sidesync-rescuer: ") {
				t.Errorf("stderr %q: want sidesync-rescuer: ... %q", stderr.String(), tc.want)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, devBuild, &stderr); code != 0 {
		t.Errorf("--help: exit %d", code)
	}
	for _, flag := range []string{"-image", "-grace", "-kubeconfig", "-metrics-bind-address", "-health-probe-bind-address",
		"-leader-elect", "-leader-election-namespace", "-leader-election-id", "-log-format"} {
		if !strings.Contains(stderr.String(), flag) {
			t.Errorf("--help does not mention %s:\n%s", flag, stderr.String())
		}
	}
}

// TestReleaseImage: a release build rescues with its own image unless told otherwise.
func TestReleaseImage(t *testing.T) {
	c, err := parse(nil, buildinfo.Info{Version: "v1.2.3"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if want := buildinfo.ImageRepository + ":v1.2.3"; c.image != want {
		t.Errorf("image %q, want %q", c.image, want)
	}
	if c.grace != 30*time.Second || c.leaderElect || c.metricsAddr != ":8080" || c.probeAddr != ":8081" || c.logFormat != "text" {
		t.Errorf("defaults: %+v", c)
	}
	c, err = parse([]string{"--image=registry.example/sidesync:dev"}, buildinfo.Info{Version: "v1.2.3"}, &bytes.Buffer{})
	if err != nil || c.image != "registry.example/sidesync:dev" {
		t.Errorf("--image: %v %q", err, c.image)
	}
}

// TestBinaryDependencies: the rescuer links no module but what controller-runtime, client-go
// and Prometheus' client bring, and of sidesync only the decision and the build's stamps: not
// the webhook, inject, Helm or the registries' code.
func TestBinaryDependencies(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command on PATH, to list the binary's dependencies")
	}
	modules := func(pkgs ...string) map[string]bool {
		args := append([]string{"list", "-deps", "-f", "{{if .Module}}{{.Module.Path}}{{end}}"}, pkgs...)
		out, err := exec.Command(goBin, args...).Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		set := map[string]bool{}
		for _, m := range strings.Fields(string(out)) {
			set[m] = true
		}
		return set
	}
	allowed := modules("sigs.k8s.io/controller-runtime/pkg/manager", "sigs.k8s.io/controller-runtime/pkg/builder",
		"k8s.io/client-go/kubernetes", "k8s.io/client-go/tools/clientcmd", "github.com/prometheus/client_golang/prometheus/promhttp")
	for m := range modules(".") {
		if !allowed[m] && m != "github.com/sidesync/sidesync" {
			t.Errorf("sidesync-rescuer links the module %s", m)
		}
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		for _, banned := range []string{"/internal/cluster/admission", "/internal/cluster/inject", "/internal/cluster/chart", "/internal/testing/kubetest", "helm.sh/", "go-containerregistry"} {
			if strings.Contains(p, banned) {
				t.Errorf("sidesync-rescuer links %s", p)
			}
		}
	}
}
