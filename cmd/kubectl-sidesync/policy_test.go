package main

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/sidesync/sidesync/internal/cluster/admission"
)

// TestPolicyFlags: a bad command line exits 2 and writes nothing on stdout.
func TestPolicyFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--image", "x:1", "--delivery", "scp"},
		{"--image", "x:1", "--bogus"},
		{"--image", "x:1", "extra"},
		{"--image", "has space"},
		{"--image", "x:1", "--exclude-namespace", "Not_A_Name"},
		{"--image", "x:1", "--native", "sometimes"},
		{}, // a development build has no release image
	} {
		var out, errOut bytes.Buffer
		if code := run(append([]string{"policy"}, args...), devBuild, nil, &out, &errOut); code != 2 || out.Len() > 0 || errOut.Len() == 0 {
			t.Errorf("policy %q: exit %d, stdout %d bytes, stderr %q; want 2, nothing, a message", args, code, out.Len(), errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"policy", "--help"}, devBuild, nil, &out, &errOut); code != 0 || !strings.Contains(out.String(), "kubectl sidesync policy | kubectl apply -f -") {
		t.Errorf("--help: exit %d, %q", code, out.String())
	}
}

// TestPolicyNative: the policy cannot convert sidecars yet: auto wraps as never does and says so,
// always is refused with nothing written, and neither prints the exact part of the conversion
// (the variable nativeMay), which would leave a convertible pod unwrapped to hang.
func TestPolicyNative(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{nil, 0, policyNativeNote},
		{[]string{"--native", "never"}, 0, policyNativeNote},
		{[]string{"--native", "always"}, 2, "--native always: the policy cannot turn sidecars into native ones yet"},
	} {
		var out, errOut bytes.Buffer
		code := run(append([]string{"policy", "--image", "x:1"}, tt.args...), devBuild, nil, &out, &errOut)
		if code != tt.code || !strings.Contains(errOut.String(), tt.stderr) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tt.args, code, errOut.String(), tt.code, tt.stderr)
		}
		if strings.Contains(out.String(), "nativeMay") {
			t.Errorf("%q: the policy offers the exact part of native conversion, which leaves convertible pods unwrapped", tt.args)
		}
		if tt.code != 0 && out.Len() > 0 {
			t.Errorf("%q: refused, but wrote %d bytes", tt.args, out.Len())
		}
	}
}

// TestPolicyOutput: the documents, in order, of kinds kubectl applies; the release's image by
// default; --backstop-only prints the backstop alone, whose warning names the webhook; --namespace
// is excluded everywhere.
func TestPolicyOutput(t *testing.T) {
	for _, tt := range []struct {
		args         []string
		kinds        []string
		backstopOnly bool
	}{
		{[]string{"--exclude-namespace", "sidesync-system"}, []string{"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
			"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicyBinding"}, false},
		{[]string{"--backstop-only", "--exclude-namespace", "sidesync-system"}, []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingAdmissionPolicyBinding"}, true},
		{[]string{"--delivery", "image-volume", "--exclude-namespace", "sidesync-system"}, nil, false},
	} {
		var out, errOut bytes.Buffer
		build := devBuild
		build.Version = "v1.2.3"
		if code := run(append([]string{"policy"}, tt.args...), build, nil, &out, &errOut); code != 0 {
			t.Fatalf("%q: exit %d: %s", tt.args, code, errOut.String())
		}
		var kinds []string
		bindings := 0
		for _, doc := range strings.Split(out.String(), "\n---\n") {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				t.Fatalf("%q: %v", tt.args, err)
			}
			kinds = append(kinds, m["kind"].(string))
			if strings.HasSuffix(m["kind"].(string), "Binding") {
				bindings++
				if !strings.Contains(doc, "sidesync-system") {
					t.Errorf("%q: binding %v does not exclude --namespace", tt.args, m["metadata"])
				}
			}
		}
		if tt.kinds != nil && strings.Join(kinds, " ") != strings.Join(tt.kinds, " ") {
			t.Errorf("%q: kinds %q, want %q", tt.args, kinds, tt.kinds)
		}
		s := out.String()
		if !strings.Contains(s, admission.BackstopPolicy) || strings.Contains(s, "creationTimestamp") || strings.Contains(s, "Deny") {
			t.Errorf("%q: output lacks the backstop, or has creationTimestamp or Deny", tt.args)
		}
		if !tt.backstopOnly && !strings.Contains(s, "ghcr.io/sidesync/sidesync:v1.2.3") {
			t.Errorf("%q: the release image is not in the policy", tt.args)
		}
		// The backstop's warning is true of the install: an injector to wait for only beside
		// the webhook (--backstop-only).
		if waits := strings.Contains(s, "once the injector runs"); waits != tt.backstopOnly {
			t.Errorf("%q: the backstop tells the user to wait for the injector: %v, want %v", tt.args, waits, tt.backstopOnly)
		}
	}
}
