package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/cluster/kubeversion"
)

// TestPolicyKubeVersion: the output's first line and stderr name the Kubernetes it needs
// (kubeversion's); --kube-version below it is refused (exit 2, nothing written), naming it.
func TestPolicyKubeVersion(t *testing.T) {
	build := devBuild
	build.Version = "v1.2.3"
	mapSince := kubeversion.MutatingAdmissionPolicy.Since.String()
	for _, tt := range []struct {
		args  []string
		needs string // the version the output needs
		ok    bool
	}{
		{nil, mapSince, true},
		{[]string{"--kube-version", "v" + mapSince + ".0"}, mapSince, true},
		{[]string{"--kube-version", "1.37.2-gke.100"}, mapSince, true},
		{[]string{"--kube-version", kubeversion.Oldest.String()}, mapSince, false},
		{[]string{"--kube-version", "1.35"}, mapSince, false},
		{[]string{"--backstop-only", "--kube-version", kubeversion.Oldest.String()}, kubeversion.Oldest.String(), true},
		{[]string{"--delivery", "image-volume", "--kube-version", "1.35"}, mapSince, false},
	} {
		var out, errOut bytes.Buffer
		code := run(append([]string{"policy", "--image", "x:1"}, tt.args...), build, nil, &out, &errOut)
		want := "needs Kubernetes " + tt.needs + " or newer"
		if !tt.ok {
			if code != 2 || out.Len() > 0 || !strings.Contains(errOut.String(), want) {
				t.Errorf("%q: exit %d, stdout %d bytes, stderr %q; want 2, nothing, a refusal saying %q", tt.args, code, out.Len(), errOut.String(), want)
			}
			continue
		}
		first, _, _ := strings.Cut(out.String(), "\n")
		if code != 0 || !strings.HasPrefix(first, "# ") || !strings.Contains(first, want) || !strings.Contains(errOut.String(), want) {
			t.Errorf("%q: exit %d, first line %q, stderr %q; want 0 and both saying %q", tt.args, code, first, errOut.String(), want)
		}
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"policy", "--image", "x:1", "--kube-version", "2.0"}, build, nil, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "--kube-version") {
		t.Errorf("--kube-version 2.0: exit %d, %q", code, errOut.String())
	}
}
