package inject

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/config"

	"github.com/sidesync/sidesync/internal/shared/contract"

	"github.com/sidesync/sidesync/internal/cluster/stream"
	"github.com/sidesync/sidesync/internal/shared/manifest"
)

// FuzzApply injects into the objects of arbitrary manifests (read as kubectl-sidesync reads
// them), with either delivery, optional --sidecar values and, for containers without a command,
// an optional image ENTRYPOINT. Apply must not panic and must not change its input. When it
// succeeds: every container it reports wrapped runs [contract.Binary] with args [flags..., "--", argv...],
// where argv is exactly what the container ran before (its command and args, or the image's
// entrypoint with the args); and Apply is idempotent: applied again to its output, directly or
// after the output was written and read back as a second `kubectl sidesync inject` reads it, it
// returns the same object with Report.Changed false.
func FuzzApply(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	golden, _ := filepath.Glob("testdata/golden/*.yaml")
	for _, name := range slices.Concat(files, golden) {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b, false, "", "")
			f.Add(b, true, "cloudsql:ready-port=9190,quit-port=9191", "/entry $(HOME)")
		}
	}
	for _, s := range []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"app","image":"example/app"}]}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"os":{"name":"windows"},"containers":[{"name":"app","command":["x"]}]}}`,
		`{"apiVersion":"v1","kind":"Pod","spec":{"containers":[{"name":"app","command":["/sidesync","--","x"]},{"name":"b","command":["sidesync"]}]}}`,
		"apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      initContainers:\n      - {name: istio-proxy, image: istio/proxyv2, restartPolicy: Always}\n      containers:\n      - {name: app, command: [a, $(X)], args: [\"$$\", \"\"], env: [{name: SIDESYNC_RESTART_POLICY, value: x}], restartPolicyRules: [{action: Restart, exitCodes: {operator: In, values: [42]}}]}\n      - {name: cloud-sql-proxy, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2, args: [--health-check, --quitquitquit]}\n",
		"apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: c}\nspec: {jobTemplate: {spec: {template: {spec: {containers: [{name: a, args: [x]}], volumes: [{name: sidesync-bin, emptyDir: {}}]}}}}}\n",
		"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, spec: {containers: [{name: a, command: [x], volumeMounts: 3}]}}\n",
		"apiVersion: v1\nkind: Pod\nspec: {containers: [{name: a, command: [x]}, {name: a, command: [y]}]}\n",
		"apiVersion: v1\nkind: Pod\nmetadata: {annotations: 5}\nspec: {containers: [{name: a, command: [x], env: null}]}\n",
	} {
		f.Add([]byte(s), false, "", "")
		f.Add([]byte(s), true, "istio", "/bin/sh -c")
	}
	f.Fuzz(func(t *testing.T, data []byte, imageVolume bool, sidecars, entrypoint string) {
		docs, _, err := stream.Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		o := Options{Version: "v1.2.3", Image: "ghcr.io/sidesync/sidesync:v1.2.3"}
		if imageVolume {
			o.Delivery = ImageVolume
		}
		if sidecars != "" {
			o.Sidecars = strings.Split(sidecars, "\n")
		}
		if o.Validate() != nil {
			return
		}
		_ = stream.Each(docs, func(obj map[string]any, tm manifest.TypeMeta, _ string) (map[string]any, error) {
			checkApply(t, obj, tm, o, entrypoints(obj, tm, entrypoint))
			o.Native = true
			checkApply(t, obj, tm, o, entrypoints(obj, tm, entrypoint))
			o.Native = false
			return obj, nil
		})
	})
}

// entrypoints gives every image of obj's pod the entrypoint's words, when there are some.
func entrypoints(obj map[string]any, tm manifest.TypeMeta, entrypoint string) Entrypoints {
	words := strings.Fields(entrypoint)
	if len(words) == 0 {
		return nil
	}
	pod := podOf(obj, tm)
	if pod == nil {
		return nil
	}
	eps := Entrypoints{}
	for _, c := range pod.Containers {
		eps[c.Image] = ResolvedImage{Pinned: "", Platforms: map[string]ImageCommand{"linux/amd64": {Entrypoint: words, Cmd: []string{"cmd"}}}}
	}
	return eps
}

func checkApply(t *testing.T, obj map[string]any, tm manifest.TypeMeta, o Options, eps Entrypoints) {
	t.Helper()
	before := deepCopy(obj)
	out, r, err := Apply(obj, tm, o, eps)
	if !reflect.DeepEqual(before, obj) {
		t.Fatalf("Apply changed its input")
	}
	if err != nil {
		return
	}
	checkWrapped(t, obj, out, tm, r, eps)
	again, r2, err := Apply(out, tm, o, eps)
	if err != nil || r2.Changed || !sameJSON(again, out) {
		t.Fatalf("Apply is not idempotent on %s: err %v, report %+v", r.Object, err, r2)
	}
	var b bytes.Buffer
	if err := stream.Write(&b, []stream.Document{{N: 1, Object: out}}, stream.YAML); err != nil {
		t.Fatalf("Write: %v", err)
	}
	docs, _, err := stream.Read(&b)
	if err != nil || len(docs) != 1 {
		t.Fatalf("Read of the written output: %v", err)
	}
	read := docs[0].Object
	again, r3, err := Apply(read, tm, o, eps)
	if err != nil || r3.Changed || !sameJSON(again, read) {
		t.Fatalf("Apply is not idempotent on %s once written and read: err %v, report %+v", r.Object, err, r3)
	}
}

// checkWrapped checks every container Apply reports wrapped against the same container before.
func checkWrapped(t *testing.T, obj, out map[string]any, tm manifest.TypeMeta, r Report, eps Entrypoints) {
	t.Helper()
	if len(r.Wrapped) == 0 {
		return
	}
	podIn, podOut := podOf(obj, tm), podOf(out, tm)
	if podIn == nil || podOut == nil {
		t.Fatalf("%s: wrapped %q, but no pod", r.Object, r.Wrapped)
	}
	in, outs := podIn.Containers, podOut.Containers
	if len(outs)+len(r.Converted) != len(in) {
		t.Fatalf("%s: containers %d before, %d after, %d made native", r.Object, len(in), len(outs), len(r.Converted))
	}
	wrappedNow := 0
	for _, c := range outs {
		i := slices.IndexFunc(in, func(b *manifest.Container) bool { return b.Name == c.Name })
		if i < 0 {
			t.Fatalf("%s: container %s was not there before", r.Object, c.Name)
		}
		if !slices.Contains(r.Wrapped, c.Name) || wrapped(in[i]) {
			continue
		}
		wrappedNow++
		if !slices.Equal(c.Command, []string{contract.Binary}) {
			t.Fatalf("%s: container %s wrapped with command %q", r.Object, c.Name, c.Command)
		}
		dash := slices.Index(c.Args, "--")
		if dash < 0 {
			t.Fatalf("%s: container %s wrapped without --: %q", r.Object, c.Name, c.Args)
		}
		checkWrapperTakes(t, r.Object, c)
		var want []string
		if len(in[i].Command) > 0 {
			want = slices.Concat(in[i].Command, in[i].Args)
		} else {
			want = Argv(nil, in[i].Args, eps[in[i].Image].Platforms["linux/amd64"])
		}
		if got := c.Args[dash+1:]; !slices.Equal(got, want) {
			t.Fatalf("%s: container %s runs %q after --, want %q", r.Object, c.Name, got, want)
		}
	}
	wrapped := wrappedNow
	if wrapped == 0 {
		t.Fatalf("%s: reported wrapped %q, but no container is", r.Object, r.Wrapped)
	}
}

// FuzzApplyPod is FuzzApply over a Pod built from arbitrary parts, which byte-level mutation of
// whole manifests seldom reaches: the app container's name, image, command, args, env,
// restartPolicy and restartPolicyRules (JSON), the pod's restartPolicy, an init container that
// may be a native sidecar, inject's own names already in use (volumes, mounts, the install
// container), and the containers selected. The properties are FuzzApply's.
func FuzzApplyPod(f *testing.F) {
	f.Add("job", "example/job", "python\njob.py", "--x\n$(HOME)", "SIDESYNC_RESTART_POLICY=x", "", "", "Never", "istio-proxy", true, false, "")
	f.Add("job", "example/job", "", "serve", "", "Always", `[{"action":"Restart","exitCodes":{"operator":"In","values":[42]}}]`, "OnFailure", "cloud-sql-proxy", true, true, "job")
	f.Add("job", "example/job", "/sidesync/bin/sidesync\n--pod-info=/sidesync/podinfo\n--\nrun", "", "", "", "null", "", "setup", false, true, "")
	f.Add("istio-proxy", "istio/proxyv2", "pilot-agent", "", "", "", "", "Never", "linkerd-proxy", true, false, "")
	f.Add("a", "img", "sidesync\n--\nx", "", "", "", `{"not":"a list"}`, "Always", "sidesync-install", false, true, "a")
	f.Add("a", "img", "x", "", "=\n=", "", "[1,2]", "", "", false, false, "b")
	f.Fuzz(func(t *testing.T, name, image, command, args, env, ownRestart, rules, podRestart, initName string, native, takenNames bool, selected string) {
		app := map[string]any{"name": name, "image": image}
		if command != "" {
			app["command"] = anyList(strings.Split(command, "\n"))
		}
		if args != "" {
			app["args"] = anyList(strings.Split(args, "\n"))
		}
		if env != "" {
			var vars []any
			for _, kv := range strings.Split(env, "\n") {
				k, v, _ := strings.Cut(kv, "=")
				vars = append(vars, map[string]any{"name": k, "value": v})
			}
			app["env"] = vars
		}
		if ownRestart != "" {
			app["restartPolicy"] = ownRestart
		}
		if rules != "" {
			if v, err := decodeJSON(rules); err == nil {
				app["restartPolicyRules"] = v
			}
		}
		spec := map[string]any{"containers": []any{app, map[string]any{"name": "other", "image": "other", "command": []any{"sleep"}}}}
		if podRestart != "" {
			spec["restartPolicy"] = podRestart
		}
		if initName != "" {
			ic := map[string]any{"name": initName, "image": "docker.io/istio/proxyv2:1.28", "command": []any{"x"}}
			if native {
				ic["restartPolicy"] = "Always"
			}
			spec["initContainers"] = []any{ic}
		}
		if takenNames {
			spec["volumes"] = []any{map[string]any{"name": contract.BinVolume, "emptyDir": map[string]any{}}, map[string]any{"name": "keep"}}
			app["volumeMounts"] = []any{map[string]any{"name": contract.PodInfoVolume, "mountPath": "/x"}, map[string]any{"name": "keep", "mountPath": "/keep"}}
		}
		obj := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}, "spec": spec}
		for _, delivery := range []Delivery{InitCopy, ImageVolume} {
			o := Options{Version: "v1.2.3", Image: "ghcr.io/sidesync/sidesync:v1.2.3", Delivery: delivery}
			if selected != "" {
				o.Containers = strings.Split(selected, "\n")
			}
			if o.Validate() != nil {
				return
			}
			checkApply(t, obj, manifest.TypeMeta{}, o, entrypoints(obj, manifest.TypeMeta{}, "/entry $(X)"))
		}
	})
}

// checkWrapperTakes checks that the wrapper accepts what inject wrote for it: its flags, and the
// restart and platform variables, read by the wrapper's own parser. inject never writes what
// the wrapper refuses (it would exit 2 in the pod).
func checkWrapperTakes(t *testing.T, object string, c *manifest.Container) {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "SIDESYNC_") && !e.From {
			env[e.Name] = e.Value
		}
	}
	_, err := config.Parse(config.ModeRun, c.Args, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("%s: the wrapper of container %s refuses what inject wrote (args %q, env %v): %v", object, c.Name, c.Args, env, err)
	}
}

// podOf reads the pod of obj, or nil.
func podOf(obj map[string]any, tm manifest.TypeMeta) *manifest.PodView {
	w, err := manifest.Locate(obj, tm)
	if err != nil || w == nil {
		return nil
	}
	p, err := manifest.ReadWorkload(w)
	if err != nil {
		return nil
	}
	return p
}

// decodeJSON decodes a JSON value as manifest.Read does: numbers kept exactly.
func decodeJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}
