package inject

import (
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"

	"github.com/google/go-cmp/cmp"
)

const jobWithVars = `
apiVersion: batch/v1
kind: Job
metadata: {name: report}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: job
        image: example/report:1.0
        command: [sh, -c, 'echo "$(GREETING)" $$HOME']
        args: [--user=$(USER), "$$(literal)"]
`

// TestWrapArgs checks the wrapped argv word for word: the user's words keep their $(VAR) and
// $$, since they stay in args, where kubelet expands them as before.
func TestWrapArgs(t *testing.T) {
	o := opts()
	o.Sidecars = []string{"cloudsql:ready-port=9190,quit-port=9191", "istio"}
	out, _ := apply(t, decode(t, jobWithVars), o, nil)
	c := at(t, out, "spec", "template", "spec", "containers", 0)
	if diff := cmp.Diff([]any{"/sidesync/bin/sidesync"}, at(t, c, "command")); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	want := []any{"--pod-info=/sidesync/podinfo", "--sidecar=cloudsql:ready-port=9190,quit-port=9191", "--sidecar=istio",
		"--", "sh", "-c", `echo "$(GREETING)" $$HOME`, "--user=$(USER)", "$$(literal)"}
	if diff := cmp.Diff(want, at(t, c, "args")); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
}

// TestKinds: Pods, Jobs and CronJobs are injected where their pod is; everything else passes
// through unchanged.
func TestKinds(t *testing.T) {
	pod := `{spec: {restartPolicy: Never, containers: [{name: app, image: a, command: [run]}]}}`
	tests := []struct {
		apiVersion, kind, body string
		containers             []any // path to the containers; nil: passed through
	}{
		{"v1", "Pod", `spec: ` + pod[7:len(pod)-1], []any{"spec", "containers"}},
		{"batch/v1", "Job", `spec: {template: ` + pod + `}`, []any{"spec", "template", "spec", "containers"}},
		{"batch/v1", "CronJob", `spec: {schedule: "@daily", jobTemplate: {spec: {template: ` + pod + `}}}`,
			[]any{"spec", "jobTemplate", "spec", "template", "spec", "containers"}},
		{"apps/v1", "Deployment", `spec: {template: ` + pod + `}`, nil},
		{"batch/v1beta1", "CronJob", `spec: {schedule: "@daily", jobTemplate: {spec: {template: ` + pod + `}}}`, nil},
		{"v1", "ConfigMap", `data: {a: "1"}`, nil},
		{"example.com/v1", "Job", `spec: {template: ` + pod + `}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.apiVersion+" "+tt.kind, func(t *testing.T) {
			y := tt.body + "\nmetadata: {name: x}\n"
			if tt.kind != "" {
				y += "apiVersion: " + tt.apiVersion + "\nkind: " + tt.kind + "\n"
			}
			in := decode(t, y)
			out, r := apply(t, in, opts(), nil)
			if tt.containers == nil {
				if diff := cmp.Diff(in, out); diff != "" || r.Injected || r.Changed {
					t.Errorf("want passed through unchanged; report %q, diff:\n%s", r, diff)
				}
				return
			}
			cmd := at(t, out, append(tt.containers, 0, "command")...)
			if diff := cmp.Diff([]any{contract.Binary}, cmd); diff != "" || !r.Changed || !cmp.Equal(r.Wrapped, []string{"app"}) {
				t.Errorf("report %q; command (-want +got):\n%s", r, diff)
			}
		})
	}
}

// TestNoKind: an object without a kind is no Kubernetes object; kubectl refuses it, and so do
// inject and lint.
func TestNoKind(t *testing.T) {
	_, _, err := Apply(decode(t, "{metadata: {name: x}, spec: {containers: [{name: a, command: [x]}]}}"), manifest.TypeMeta{}, opts(), nil)
	if err == nil || err.Error() != "(no kind)/x: not a Kubernetes object: it has no kind" {
		t.Errorf("error %v", err)
	}
}

// TestUnknownFieldsSurvive: fields inject does not own, known or not to any k8s.io/api, come
// through with their values, at every level inject touches.
func TestUnknownFieldsSurvive(t *testing.T) {
	in := decode(t, `
apiVersion: batch/v1
kind: Job
metadata: {name: report, futureMeta: {a: 1}}
spec:
  futureJobField: true
  template:
    metadata: {futureTemplateMeta: x, annotations: {keep: "yes"}}
    spec:
      restartPolicy: Never
      futurePodField: {nested: [1, 2.5, 12345678901234567890]}
      initContainers:
      - {name: init, image: busybox, command: ["true"], futureInitField: 1}
      containers:
      - name: app
        image: example/app:1
        command: [run]
        futureContainerField: {x: why}
        env: [{name: A, value: "1", futureEnvField: z}]
        volumeMounts: [{name: data, mountPath: /data, futureMountField: 7}]
        lifecycle: {stopSignal: SIGUSR1}
      volumes:
      - {name: data, emptyDir: {}, futureVolumeField: [a]}
      - {name: tools, image: {reference: example/tools:1, pullPolicy: Always}}
`)
	out, _ := apply(t, in, opts(), nil)
	out = roundTrip(t, out)
	spec := []any{"spec", "template", "spec"}
	for _, tt := range []struct {
		path []any
		want any
	}{
		{[]any{"metadata", "futureMeta", "a"}, "1"},
		{[]any{"spec", "futureJobField"}, true},
		{[]any{"spec", "template", "metadata", "futureTemplateMeta"}, "x"},
		{[]any{"spec", "template", "metadata", "annotations", "keep"}, "yes"},
		{append(spec, "futurePodField", "nested", 2), "12345678901234567890"},
		{append(spec, "futurePodField", "nested", 1), "2.5"},
		{append(spec, "initContainers", 1, "futureInitField"), "1"},
		{append(spec, "containers", 0, "futureContainerField", "x"), "why"},
		{append(spec, "containers", 0, "env", 0, "futureEnvField"), "z"},
		{append(spec, "containers", 0, "volumeMounts", 0, "futureMountField"), "7"},
		{append(spec, "containers", 0, "lifecycle", "stopSignal"), "SIGUSR1"},
		{append(spec, "volumes", 0, "futureVolumeField", 0), "a"},
		{append(spec, "volumes", 1, "image", "reference"), "example/tools:1"},
	} {
		got := at(t, out, tt.path...)
		if s, ok := got.(interface{ String() string }); ok {
			got = s.String() // json.Number
		}
		if !cmp.Equal(tt.want, got) {
			t.Errorf("%v = %v (%T), want %v", tt.path, got, got, tt.want)
		}
	}
}

// TestApplyLeavesInputAlone: Apply works on a copy.
func TestApplyLeavesInputAlone(t *testing.T) {
	in := decode(t, jobWithVars)
	before := toYAML(t, in)
	apply(t, in, opts(), nil)
	if diff := cmp.Diff(before, toYAML(t, in)); diff != "" {
		t.Errorf("Apply changed its input:\n%s", diff)
	}
}

// TestDeliverySwitch: injecting an injected object with the other delivery gives what
// injecting the original with it gives, and nothing of the first delivery is left.
func TestDeliverySwitch(t *testing.T) {
	orig := decode(t, jobWithVars)
	for _, path := range [][2]Delivery{{InitCopy, ImageVolume}, {ImageVolume, InitCopy}} {
		t.Run(string(path[0])+" to "+string(path[1]), func(t *testing.T) {
			first, second := opts(), opts()
			first.Delivery, second.Delivery = path[0], path[1]
			once, _ := apply(t, orig, first, nil)
			switched, r := apply(t, roundTrip(t, once), second, nil)
			direct, _ := apply(t, orig, second, nil)
			if diff := cmp.Diff(toYAML(t, direct), toYAML(t, switched)); diff != "" {
				t.Errorf("switched delivery (-direct +switched):\n%s", diff)
			}
			if !r.Changed || r.Delivery != path[1] {
				t.Errorf("report %q: want changed, delivery %s", r, path[1])
			}
		})
	}
}

// TestInputErrors: malformed pods are errors that name the field.
func TestInputErrors(t *testing.T) {
	tests := []struct{ name, spec, want string }{
		{"containers not a list", `containers: {a: b}`, "spec.template.spec.containers: not a list"},
		{"no containers", `containers: []`, "spec.template.spec.containers: no containers"},
		{"container not an object", `containers: [x]`, "spec.template.spec.containers[0]: not an object"},
		{"container without a name", `containers: [{image: a}]`, "spec.template.spec.containers[0]: no name"},
		{"command not strings", `containers: [{name: a, command: [1]}]`, "spec.template.spec.containers[0].command[0]: not a string"},
		{"args not a list", `containers: [{name: a, command: [x], args: x}]`, "spec.template.spec.containers[0].args: not a list"},
		{"env not a list", `containers: [{name: a, command: [x], env: x}]`, "spec.template.spec.containers[0].env: not a list"},
		{"init containers not a list", `{initContainers: 1, containers: [{name: a}]}`, "spec.template.spec.initContainers: not a list"},
		{"two containers with one name", `containers: [{name: a, command: [x]}, {name: a}]`, `spec.template.spec: container name "a" is used twice`},
		{"an init container and a container with one name", `{initContainers: [{name: a, command: [x]}], containers: [{name: a, command: [z]}]}`, `spec.template.spec: container name "a" is used twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec
			if !strings.HasPrefix(spec, "{") {
				spec = "{" + spec + "}"
			}
			in := decode(t, "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {template: {spec: "+spec+"}}")
			_, _, err := Apply(in, manifest.TypeMeta{}, opts(), nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "Job/j: ") {
				t.Errorf("Apply error %v, want Job/j: ...%s", err, tt.want)
			}
		})
	}
	_, _, err := Apply(decode(t, "{apiVersion: batch/v1, kind: Job, metadata: {name: j}, spec: {}}"), manifest.TypeMeta{}, opts(), nil)
	if err == nil || !strings.Contains(err.Error(), "spec.template: missing") {
		t.Errorf("Job without a template: error %v", err)
	}
}
