package stream

import (
	"bytes"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// injectPod changes a pod's metadata and spec as `kubectl sidesync inject` does
// (internal/cluster/inject's golden files): the container app runs sidesync, its command and
// args after --; it gets sidesync's mounts and a variable; sidesync's install container comes
// first among the init containers; its volumes come last; the pod gets its annotations.
func injectPod(meta, spec map[string]any, app string) {
	for _, c := range spec["containers"].([]any) {
		c := c.(map[string]any)
		if c["name"] != app {
			continue
		}
		args, _ := c["args"].([]any)
		c["args"] = append(append([]any{"--pod-info=/sidesync/podinfo", "--"}, c["command"].([]any)...), args...)
		c["command"] = []any{"/sidesync/bin/sidesync"}
		mounts, _ := c["volumeMounts"].([]any)
		c["volumeMounts"] = append(mounts,
			map[string]any{"name": "sidesync-bin", "mountPath": "/sidesync/bin", "readOnly": true},
			map[string]any{"name": "sidesync-podinfo", "mountPath": "/sidesync/podinfo", "readOnly": true})
		env, _ := c["env"].([]any)
		c["env"] = append(env, map[string]any{"name": "SIDESYNC_RESTART_POLICY", "value": "Never"})
	}
	inits, _ := spec["initContainers"].([]any)
	spec["initContainers"] = append([]any{map[string]any{
		"name": "sidesync-install", "image": "ghcr.io/sidesync/sidesync:v1.2.3",
		"command":      []any{"/sidesync", "install", "/sidesync-install"},
		"volumeMounts": []any{map[string]any{"name": "sidesync-bin", "mountPath": "/sidesync-install"}},
	}}, inits...)
	volumes, _ := spec["volumes"].([]any)
	spec["volumes"] = append(volumes,
		map[string]any{"name": "sidesync-bin", "emptyDir": map[string]any{"sizeLimit": "64Mi"}},
		map[string]any{"name": "sidesync-podinfo", "downwardAPI": map[string]any{"items": []any{
			map[string]any{"path": "annotations", "fieldRef": map[string]any{"fieldPath": "metadata.annotations"}}}}})
	annotations, _ := meta["annotations"].(map[string]any)
	if annotations == nil {
		annotations = map[string]any{}
	}
	annotations["sidesync.io/injected"] = "v1.2.3 init-copy"
	annotations["sidesync.io/wrapped"] = app
	meta["annotations"] = annotations
}

// injected is the paths of the nodes injectPod changes or adds, at the pod's metadata and spec.
func injected(meta, spec []any, app string) [][]any {
	at := func(base []any, rest ...any) []any { return append(append([]any(nil), base...), rest...) }
	c := at(spec, "containers", called(app))
	return [][]any{
		at(c, "command"), at(c, "args"), at(c, "volumeMounts", called("sidesync-bin")), at(c, "volumeMounts", called("sidesync-podinfo")),
		at(c, "env", called("SIDESYNC_RESTART_POLICY")), at(spec, "initContainers", called("sidesync-install")),
		at(spec, "volumes", called("sidesync-bin")), at(spec, "volumes", called("sidesync-podinfo")),
		at(meta, "annotations", "sidesync.io/injected"), at(meta, "annotations", "sidesync.io/wrapped"),
	}
}

// TestWriteSpliced: inject's changes to real-world shapes of manifests change the lines of the
// nodes they change and no others; what is added is written as the document writes the rest.
func TestWriteSpliced(t *testing.T) {
	podPaths := func(doc int, path ...any) ([]any, []any) {
		base := append([]any{doc}, path...)
		return append(base, "metadata"), append(base, "spec")
	}
	tests := []struct {
		name string
		in   string
		// inject is the document's pod to inject, in its object: document, path to the
		// pod; app is the container wrapped.
		pod  []any
		app  string
		more [][]any // the paths of other nodes that change: flow collections that grow
		want string  // when not empty, the whole output
	}{{
		name: "a flow command over several lines in a container left alone",
		in: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    metadata:
      labels:
        app: web
      annotations:
        owner: web-team   # who to call
    spec:
      containers:
      - name: app
        image: example/app:1
        command: ["sh", "-c",
          "exec /app/server --port=8080"]
        env:
        - name: A
          value: "1"
      - name: log-shipper
        image: 'example/shipper:2'
        command: ["sh", "-c",
                  "while true; do ship /var/log/app; sleep 10; done"]
        volumeMounts:
          - name: logs
            mountPath: /var/log/app
      volumes:
      - name: logs
        emptyDir: {}
`,
		pod: []any{0, "spec", "template"}, app: "app",
	}, {
		name: "lists indented under their keys",
		in: `apiVersion: batch/v1
kind: Job
metadata:
  name: report
spec:
  template:
    spec:
      containers:
        - name: job
          image: example/job:1
          command:
            - python
            - /app/job.py
        - name: proxy
          args:
            - --port=9090
      volumes:
        - name: data
          emptyDir: {}
`,
		pod: []any{0, "spec", "template"}, app: "job",
		want: `apiVersion: batch/v1
kind: Job
metadata:
  name: report
spec:
  template:
    spec:
      containers:
        - name: job
          image: example/job:1
          command:
            - /sidesync/bin/sidesync
          args:
            - --pod-info=/sidesync/podinfo
            - --
            - python
            - /app/job.py
          env:
            - name: SIDESYNC_RESTART_POLICY
              value: Never
          volumeMounts:
            - mountPath: /sidesync/bin
              name: sidesync-bin
              readOnly: true
            - mountPath: /sidesync/podinfo
              name: sidesync-podinfo
              readOnly: true
        - name: proxy
          args:
            - --port=9090
      volumes:
        - name: data
          emptyDir: {}
        - emptyDir:
            sizeLimit: 64Mi
          name: sidesync-bin
        - downwardAPI:
            items:
              - fieldRef:
                  fieldPath: metadata.annotations
                path: annotations
          name: sidesync-podinfo
      initContainers:
        - command:
            - /sidesync
            - install
            - /sidesync-install
          image: ghcr.io/sidesync/sidesync:v1.2.3
          name: sidesync-install
          volumeMounts:
            - mountPath: /sidesync-install
              name: sidesync-bin
    metadata:
      annotations:
        sidesync.io/injected: v1.2.3 init-copy
        sidesync.io/wrapped: job
`,
	}, {
		name: "indented by four, lists at their keys' column",
		in: `kind: Pod
metadata:
    name: p
spec:
    containers:
    - name: app
      command: [app]
    volumes:
    - name: data
      emptyDir: {}
`,
		pod: []any{0}, app: "app",
		want: `kind: Pod
metadata:
    name: p
    annotations:
        sidesync.io/injected: v1.2.3 init-copy
        sidesync.io/wrapped: app
spec:
    containers:
    - name: app
      command: [/sidesync/bin/sidesync]
      args:
      - --pod-info=/sidesync/podinfo
      - --
      - app
      env:
      - name: SIDESYNC_RESTART_POLICY
        value: Never
      volumeMounts:
      - mountPath: /sidesync/bin
        name: sidesync-bin
        readOnly: true
      - mountPath: /sidesync/podinfo
        name: sidesync-podinfo
        readOnly: true
    volumes:
    - name: data
      emptyDir: {}
    - emptyDir:
          sizeLimit: 64Mi
      name: sidesync-bin
    - downwardAPI:
          items:
          - fieldRef:
                fieldPath: metadata.annotations
            path: annotations
      name: sidesync-podinfo
    initContainers:
    - command:
      - /sidesync
      - install
      - /sidesync-install
      image: ghcr.io/sidesync/sidesync:v1.2.3
      name: sidesync-install
      volumeMounts:
      - mountPath: /sidesync-install
        name: sidesync-bin
`,
	}, {
		name: "indented by four, lists too, elements four after their dash",
		in: `kind: Pod
metadata:
    name: p
spec:
    containers:
        -   name: app
            command: [app]
`,
		pod: []any{0}, app: "app",
		want: `kind: Pod
metadata:
    name: p
    annotations:
        sidesync.io/injected: v1.2.3 init-copy
        sidesync.io/wrapped: app
spec:
    containers:
        -   name: app
            command: [/sidesync/bin/sidesync]
            args:
                -   --pod-info=/sidesync/podinfo
                -   --
                -   app
            env:
                -   name: SIDESYNC_RESTART_POLICY
                    value: Never
            volumeMounts:
                -   mountPath: /sidesync/bin
                    name: sidesync-bin
                    readOnly: true
                -   mountPath: /sidesync/podinfo
                    name: sidesync-podinfo
                    readOnly: true
    initContainers:
        -   command:
                -   /sidesync
                -   install
                -   /sidesync-install
            image: ghcr.io/sidesync/sidesync:v1.2.3
            name: sidesync-install
            volumeMounts:
                -   mountPath: /sidesync-install
                    name: sidesync-bin
    volumes:
        -   emptyDir:
                sizeLimit: 64Mi
            name: sidesync-bin
        -   downwardAPI:
                items:
                    -   fieldRef:
                            fieldPath: metadata.annotations
                        path: annotations
            name: sidesync-podinfo
`,
	}, {
		name: "lists at their keys' column, block commands, quoting",
		in: `kind: Pod
metadata:
  name: p
  annotations:
    "quoted": 'single'
spec:
  containers:
  - name: app
    command:
    - "python"
    - '/app/main.py'
    args: [--verbose]
    volumeMounts:
    - {name: data, mountPath: /data}
  - name: proxy
    command: [ "envoy" , '-c', /etc/envoy.yaml ]
  initContainers:
  - name: fetch
    image: busybox
  volumes:
  - name: data
    emptyDir: {}
`,
		pod: []any{0}, app: "app",
	}, {
		name: "literal and folded scalars",
		in: `kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: app
    command: ["/bin/sh", "-c"]
    args:
    - |
      set -e
      # not a comment: a line of the script
      exec /app/run

  - name: helper
    command: [/bin/sh, -c]
    args:
    - >-
      folded
      text
    env:
    - name: SCRIPT
      value: |-
        #!/bin/sh
        # a line of the script too
  volumes: []
`,
		pod: []any{0}, app: "app", more: [][]any{{0, "spec", "volumes"}},
	}, {
		name: "comments and blank lines",
		in: `# The web app.
kind: Pod
metadata:
  name: web # the name

  labels: {app: web}
# the spec
spec:
  # the containers
  containers:
  # the app
  - name: app   # wrapped
    command: [/app] # the server

    # its variables
    env:
    - name: A # a
      value: a

  # the proxy, left alone
  - name: proxy
    image: envoy   # pinned

# the end
`,
		pod: []any{0}, app: "app",
	}, {
		name: "CRLF",
		in:   "kind: Pod\r\nmetadata:\r\n  name: p # p\r\nspec:\r\n  containers:\r\n  - name: app\r\n    command: [\"a\",\r\n      \"b\"]\r\n  - name: other\r\n    command: [\"c\",\r\n      \"d\"]\r\n",
		pod:  []any{0}, app: "app",
	}, {
		name: "documents after ---, and a List",
		in: `# leading comment
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data:
  script: |
    echo hi
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata:
    name: left-alone
  spec:
    containers:
    - name: app
      command: ["sh",
        "-c", "sleep 1"]
- apiVersion: v1
  kind: Pod
  metadata:
    name: injected
  spec:
    containers:
      - name: app
        command: ["sh",
          "-c", "sleep 1"]
--- # the end
`,
		pod: []any{1, "items", 1}, app: "app",
	}, {
		name: "a container written as flow",
		in: `kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: app, image: app, command: [app]}
  - {name: proxy, image: envoy, command: [envoy]}
`,
		pod: []any{0}, app: "app",
		more: [][]any{{0, "metadata"}, {0, "spec", "containers", called("app")}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, f := read(t, tt.in)
			obj := docs[tt.pod[0].(int)].Object
			pod := at(obj, tt.pod[1:]...).(map[string]any)
			meta, _ := pod["metadata"].(map[string]any)
			if meta == nil {
				meta = map[string]any{}
				pod["metadata"] = meta
			}
			injectPod(meta, pod["spec"].(map[string]any), tt.app)
			want := objects(docs)
			out := write(t, docs, f)
			if tt.want != "" {
				if diff := cmp.Diff(tt.want, out); diff != "" {
					t.Errorf("written (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(want, objects(readAgain(t, out))); diff != "" {
				t.Errorf("reads back as (-want +got):\n%s", diff)
			}
			metaPath, specPath := podPaths(tt.pod[0].(int), tt.pod[1:]...)
			checkOnlyChanged(t, tt.in, out, append(injected(metaPath, specPath, tt.app), tt.more...))
		})
	}
}

// readAgain is the documents of what Write wrote.
func readAgain(t *testing.T, out string) []Document {
	t.Helper()
	docs, _, err := Read(bytes.NewReader([]byte(out)))
	if err != nil {
		t.Fatalf("%q does not read back: %v", out, err)
	}
	return docs
}

// BenchmarkWriteInjected writes inject's change to a real Job (internal/cluster/inject's
// testdata): spliced, as Write does, and merged as a whole, as it did before.
func BenchmarkWriteInjected(b *testing.B) {
	data, err := os.ReadFile("../inject/testdata/job.yaml")
	if err != nil {
		b.Fatal(err)
	}
	docs, _, err := Read(bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	spec := at(docs[0].Object, "spec", "template").(map[string]any)
	injectPod(spec["metadata"].(map[string]any), spec["spec"].(map[string]any), "job")
	now, err := canonical(docs[0].Object)
	if err != nil {
		b.Fatal(err)
	}
	for _, bb := range []struct {
		name  string
		write func(*source, any, []byte) ([]byte, bool)
	}{{"spliced", spliced}, {"merged", merged}} {
		b.Run(bb.name, func(b *testing.B) {
			for b.Loop() {
				if _, ok := bb.write(docs[0].src, decoded(now), now); !ok {
					b.Fatal("not written")
				}
			}
		})
	}
}
