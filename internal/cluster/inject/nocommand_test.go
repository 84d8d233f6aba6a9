package inject

import (
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"

	"github.com/google/go-cmp/cmp"
)

const podNoCommand = `
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  restartPolicy: Never
  containers:
  - {name: app, image: "example/app:1"}
`

// TestNoCommandUnresolved: a container whose image's ENTRYPOINT decides what runs is left as
// it is when the image was not resolved, with a warning that says what to add; a pod with
// nothing else to wrap comes back unchanged.
func TestNoCommandUnresolved(t *testing.T) {
	in := decode(t, podNoCommand)
	out, r := apply(t, in, opts(), nil)
	if diff := cmp.Diff(in, out); diff != "" || r.Changed {
		t.Errorf("pod changed (report %q):\n%s", r, diff)
	}
	if !cmp.Equal(r.Left, []Left{{"app", "no command"}}) || len(r.Warnings) != 1 {
		t.Fatalf("report %q, warnings %q", r, r.Warnings)
	}
	for _, want := range []string{"container app", "example/app:1", "command:", "--resolve"} {
		if !strings.Contains(r.Warnings[0], want) {
			t.Errorf("warning %q does not say %q", r.Warnings[0], want)
		}
	}
	if got := r.String(); got != "Pod/p: left unchanged (an app container cannot be wrapped); left app (no command)" {
		t.Errorf("String() = %q", got)
	}
}

// TestImages lists exactly the images Apply would need: containers to wrap without a command,
// each image once.
func TestImages(t *testing.T) {
	in := decode(t, podWith(`[{name: a, image: "x:1"}, {name: b, image: "x:1", args: [serve]}, {name: c, image: "z:2", command: [z]},
		{name: istio-proxy, image: "istio/proxyv2:1"}, {name: d, image: "w:3"}, {name: e, image: "v:4", command: [`+contract.Binary+`]}]`,
		`[{name: i, image: "u:5"}]`))
	got, err := Images(in, manifest.TypeMeta{}, opts())
	if err != nil || !cmp.Equal(got, []string{"x:1", "w:3"}) {
		t.Errorf("Images = %q, %v; want [x:1 w:3]", got, err)
	}
	o := opts()
	o.Containers = []string{"d"}
	if got, _ := Images(in, manifest.TypeMeta{}, o); !cmp.Equal(got, []string{"w:3"}) {
		t.Errorf("Images with Containers [d] = %q, want [w:3]", got)
	}
	if _, err := Images(in, manifest.TypeMeta{}, Options{}); err == nil {
		t.Error("Images with invalid options: no error")
	}
}

// TestNoCommandResolved: with the image resolved, the container runs its argv by the
// Kubernetes rules (inlined when every platform agrees, else per platform in
// contract.Env(contract.FlagPlatformCommands)) and its image is pinned to the digest read.
func TestNoCommandResolved(t *testing.T) {
	const pinned = "example/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	amd := ImageCommand{Entrypoint: []string{"/entry", "$(HOME)"}, Cmd: []string{"serve"}}
	arm := ImageCommand{Entrypoint: []string{"/entry-arm"}, Cmd: []string{"serve"}}
	armSameEntry := ImageCommand{Entrypoint: []string{"/entry", "$(HOME)"}, Cmd: []string{"serve-arm"}}
	flagsDash := []any{"--pod-info=" + contract.PodInfoDir, "--"}
	tests := []struct {
		name      string
		args      string
		platforms map[string]ImageCommand
		wantArgs  []any
		wantEnv   string // contract.Env(contract.FlagPlatformCommands); "" for none
		wrapped   bool
	}{
		{"one platform", "", map[string]ImageCommand{"linux/amd64": amd},
			append(flagsDash, "/entry", "$$(HOME)", "serve"), "", true},
		{"platforms agree", "", map[string]ImageCommand{"linux/amd64": amd, "linux/arm64/v8": amd},
			append(flagsDash, "/entry", "$$(HOME)", "serve"), "", true},
		{"CMD differs but args replace it", "[--port=$(PORT)]", map[string]ImageCommand{"linux/amd64": amd, "linux/arm64/v8": armSameEntry},
			append(flagsDash, "/entry", "$$(HOME)", "--port=$(PORT)"), "", true},
		{"ENTRYPOINT differs", "", map[string]ImageCommand{"linux/amd64": amd, "linux/arm64/v8": arm},
			flagsDash, `{"linux/amd64":["/entry","$$(HOME)","serve"],"linux/arm64/v8":["/entry-arm","serve"]}`, true},
		{"ENTRYPOINT differs, with args", "[--x, a&b]", map[string]ImageCommand{"linux/amd64": amd, "linux/arm64/v8": arm},
			flagsDash, `{"linux/amd64":["/entry","$$(HOME)","--x","a&b"],"linux/arm64/v8":["/entry-arm","--x","a&b"]}`, true},
		{"ENTRYPOINT differs, args with $(VAR)", "[--port=$(PORT)]", map[string]ImageCommand{"linux/amd64": amd, "linux/arm64/v8": arm},
			nil, "", false},
		{"nothing to run", "", map[string]ImageCommand{"linux/amd64": {}}, nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := strings.Replace(podNoCommand, `image: "example/app:1"}`, `image: "example/app:1", args: `+tt.args+`}`, 1)
			if tt.args == "" {
				y = podNoCommand
			}
			eps := Entrypoints{"example/app:1": {Pinned: pinned, Platforms: tt.platforms}}
			out, r := apply(t, decode(t, y), opts(), eps)
			c := at(t, roundTrip(t, out), "spec", "containers", 0).(map[string]any)
			if !tt.wrapped {
				if c["command"] != nil || c["image"] != "example/app:1" || len(r.Warnings) != 1 || r.Changed {
					t.Errorf("want left alone with a warning; container %v, report %q %q", c, r, r.Warnings)
				}
				return
			}
			if diff := cmp.Diff(tt.wantArgs, c["args"]); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if c["image"] != pinned {
				t.Errorf("image %v, want %s", c["image"], pinned)
			}
			var gotEnv string
			for _, e := range c["env"].([]any) {
				if e := e.(map[string]any); e["name"] == contract.Env(contract.FlagPlatformCommands) {
					gotEnv = e["value"].(string)
				}
			}
			if gotEnv != tt.wantEnv {
				t.Errorf("%s = %s, want %s", contract.Env(contract.FlagPlatformCommands), gotEnv, tt.wantEnv)
			}
		})
	}
}

// TestPlatformCommandsKept: re-injecting a container wrapped with per-platform argvs keeps
// them; the env stays in the same order.
func TestPlatformCommandsKept(t *testing.T) {
	eps := Entrypoints{"example/app:1": {Pinned: "example/app@sha256:abc", Platforms: map[string]ImageCommand{
		"linux/amd64": {Entrypoint: []string{"/a"}}, "linux/arm64": {Entrypoint: []string{"/b"}}}}}
	once, _ := apply(t, decode(t, podNoCommand), opts(), eps)
	twice, r := apply(t, roundTrip(t, once), opts(), nil)
	if diff := cmp.Diff(toYAML(t, once), toYAML(t, twice)); diff != "" || r.Changed {
		t.Errorf("second inject changed it (-once +twice):\n%s", diff)
	}
}
