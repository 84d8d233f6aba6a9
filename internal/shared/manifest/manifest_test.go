package manifest

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// decode decodes JSON as the readers get it (json.Number for numbers).
func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return m
}

func TestLocate(t *testing.T) {
	for _, tc := range []struct {
		name, obj string
		// want is "Kind Name TemplatePath jobSpec?", "nil", or the error's text ("unsupported: "
		// prefix for an *Unsupported).
		want string
	}{
		{"pod", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{}}`, "Pod Pod/p  false"},
		{"job", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"template":{"spec":{}}}}`,
			"Job Job/j spec.template true"},
		{"cronjob", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"generateName":"c-"},"spec":{"jobTemplate":{"spec":{"template":{"spec":{}}}}}}`,
			"CronJob CronJob/c-* spec.jobTemplate.spec.template true"},
		{"deployment is not ours", `{"apiVersion":"apps/v1","kind":"Deployment","spec":{}}`, "nil"},
		{"a Job of another group is someone else's", `{"apiVersion":"example.com/v1","kind":"Job"}`, "nil"},
		{"a Pod of another group is someone else's", `{"apiVersion":"example.com/v1","kind":"Pod"}`, "nil"},
		{"removed cronjob", `{"apiVersion":"batch/v1beta1","kind":"CronJob","metadata":{"name":"old"}}`,
			"unsupported: CronJob/old: apiVersion batch/v1beta1 is not served since Kubernetes 1.25: upgrade it to batch/v1"},
		{"removed cronjob, with its pod where batch/v1 has it", `{"apiVersion":"batch/v1beta1","kind":"CronJob","metadata":{"name":"old"},"spec":{"jobTemplate":{"spec":{"template":{"spec":{}}}}}}`,
			"unsupported: CronJob/old: apiVersion batch/v1beta1 is not served since Kubernetes 1.25: upgrade it to batch/v1 (pod at spec.jobTemplate.spec.template)"},
		{"alpha cronjob", `{"apiVersion":"batch/v2alpha1","kind":"CronJob","metadata":{"name":"old"}}`,
			"unsupported: CronJob/old: apiVersion batch/v2alpha1 is not served since Kubernetes 1.21: upgrade it to batch/v1"},
		{"unknown pod version", `{"apiVersion":"v2","kind":"Pod","metadata":{"name":"p"}}`,
			"unsupported: Pod/p: apiVersion v2: sidesync reads a Pod only as v1"},
		{"no kind", `{"apiVersion":"v1","metadata":{"name":"p"}}`, "not a Kubernetes object: it has no kind"},
		{"job without template", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{}}`,
			"Job/j: spec.template: missing"},
		{"template not an object", `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"template":[]}}`,
			"Job/j: spec.template: not an object"},
		{"no name", `{"apiVersion":"v1","kind":"Pod","spec":{}}`, "Pod Pod/(no name)  false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := Locate(decode(t, tc.obj), TypeMeta{})
			var got string
			var u *Unsupported
			switch {
			case errors.As(err, &u):
				got = "unsupported: " + err.Error()
				if u.Workload != nil {
					got += " (pod at " + u.Workload.TemplatePath + ")"
				}
			case err != nil:
				got = err.Error()
			case w == nil:
				got = "nil"
			default:
				got = strings.Join([]string{string(w.Kind), w.Name, w.TemplatePath, map[bool]string{true: "true", false: "false"}[w.JobSpec != nil]}, " ")
			}
			if got != tc.want {
				t.Errorf("Locate(%s)\n got %q\nwant %q", tc.obj, got, tc.want)
			}
		})
	}
}

func TestItems(t *testing.T) {
	type seen struct{ Kind, APIVersion, Where string }
	walk := func(obj string) ([]seen, error) {
		var got []seen
		_, err := Items(decode(t, obj), func(item map[string]any, inh TypeMeta, where string) (map[string]any, error) {
			tm := typeMeta(item, inh)
			got = append(got, seen{tm.Kind, tm.APIVersion, where})
			return map[string]any{"replaced": where}, nil
		})
		return got, err
	}

	got, err := walk(`{"apiVersion":"v1","kind":"PodList","items":[{"metadata":{"name":"a"}},{"apiVersion":"batch/v1","kind":"Job"}]}`)
	want := []seen{{"Pod", "v1", "items[0]"}, {"Job", "batch/v1", "items[1]"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("PodList: got %v, %v; want %v (an item without a type is a Pod; one with its own keeps it)", got, err, want)
	}
	got, err = walk(`{"apiVersion":"v1","kind":"List","items":[{"metadata":{"name":"a"}}]}`)
	if want := []seen{{"", "", "items[0]"}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("List: got %v, %v; want %v (a plain List's items must say what they are)", got, err, want)
	}
	got, err = walk(`{"apiVersion":"v1","kind":"Pod"}`)
	if want := []seen{{"Pod", "v1", ""}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Pod: got %v, %v; want %v", got, err, want)
	}
	// A kind ending in List without items is an object of its own (a NetworkPolicy-like CRD).
	got, err = walk(`{"apiVersion":"example.com/v1","kind":"AllowList","spec":{}}`)
	if want := []seen{{"AllowList", "example.com/v1", ""}}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("AllowList: got %v, %v; want %v", got, err, want)
	}
	for obj, msg := range map[string]string{
		`{"kind":"List","items":{"a":1}}`: "items: not a list",
		`{"kind":"List","items":[1]}`:     "items[0]: not an object",
	} {
		if _, err := walk(obj); err == nil || err.Error() != msg {
			t.Errorf("%s: got %v, want %q", obj, err, msg)
		}
	}

	// What fn returns takes the item's place.
	obj := decode(t, `{"kind":"List","items":[{"kind":"Pod"}]}`)
	out, err := Items(obj, func(map[string]any, TypeMeta, string) (map[string]any, error) {
		return map[string]any{"kind": "Changed"}, nil
	})
	if err != nil || out["items"].([]any)[0].(map[string]any)["kind"] != "Changed" {
		t.Errorf("Items did not put fn's result in place: %v, %v", out, err)
	}
}

func TestReadPod(t *testing.T) {
	p, err := ReadPod(decode(t, `{
		"metadata": {"annotations": {"a": "1"}, "labels": {"l": "x"}},
		"spec": {
			"restartPolicy": "Never",
			"os": {"name": "linux"},
			"initContainers": [
				{"name": "proxy", "image": "envoy", "restartPolicy": "Always", "startupProbe": {"httpGet": {"port": 15021}}},
				{"name": "setup", "image": "busybox"}
			],
			"containers": [{
				"name": "app", "image": "app:1", "command": ["/app"], "args": ["-v"],
				"restartPolicy": "Never",
				"restartPolicyRules": [{"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}],
				"env": [{"name": "A", "value": "x"}, {"name": "E", "value": ""}, {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
			}]
		}}`), "spec.template")
	if err != nil {
		t.Fatal(err)
	}
	if p.Path != "spec.template" || p.RestartPolicy != "Never" || p.OS != "linux" || p.Annotations["a"] != "1" || p.Labels["l"] != "x" {
		t.Errorf("pod fields: %+v", p)
	}
	if len(p.InitContainers) != 2 || len(p.Containers) != 1 || len(p.All()) != 3 {
		t.Fatalf("containers: %d init, %d regular", len(p.InitContainers), len(p.Containers))
	}
	proxy, setup, app := p.InitContainers[0], p.InitContainers[1], p.Containers[0]
	if !proxy.Native() || !proxy.StartupProbe || setup.Native() || app.Native() || app.Init {
		t.Errorf("native: proxy %v (probe %v), setup %v, app %v (init %v)", proxy.Native(), proxy.StartupProbe, setup.Native(), app.Native(), app.Init)
	}
	if app.Path != "spec.template.spec.containers[0]" || setup.Path != "spec.template.spec.initContainers[1]" {
		t.Errorf("paths: %q, %q", app.Path, setup.Path)
	}
	if got := app.Argv(); !reflect.DeepEqual(got, []string{"/app", "-v"}) {
		t.Errorf("Argv = %q", got)
	}
	rules := []any{map[string]any{"action": "Restart", "exitCodes": map[string]any{"operator": "In", "values": []any{json.Number("42")}}}}
	if !reflect.DeepEqual(app.RestartPolicyRules, rules) {
		t.Errorf("RestartPolicyRules = %#v, want them as decoded, untouched", app.RestartPolicyRules)
	}
	for name, want := range map[string]struct {
		v       string
		set, fr bool
	}{"A": {"x", true, false}, "E": {"", false, false}, "S": {"", false, true}, "U": {"", false, false}} {
		v, set := app.EnvValue(name)
		if v != want.v || set != want.set || app.EnvFrom(name) != want.fr {
			t.Errorf("env %s: %q %v from %v; want %+v", name, v, set, app.EnvFrom(name), want)
		}
	}
	if p.Container("setup") != setup || p.Container("app") != app || p.Container("none") != nil {
		t.Error("Container looks up by name across init and regular containers")
	}
	// Unset restartPolicy is "" (Kubernetes' default, Always, is internal/shared/restart's to apply).
	if q, err := ReadPod(decode(t, `{"metadata":{},"spec":{"containers":[{"name":"a"}]}}`), ""); err != nil || q.RestartPolicy != "" || q.Annotations == nil || q.Labels == nil {
		t.Errorf("defaults: %+v, %v", q, err)
	}
}

func TestReadPodErrors(t *testing.T) {
	for obj, msg := range map[string]string{
		`{"metadata":[]}`: "t.metadata: not an object",
		`{"metadata":{"annotations":{"a":1}},"spec":{}}`:               "t.metadata.annotations.a: not a string",
		`{"metadata":{"labels":"x"},"spec":{}}`:                        "t.metadata.labels: not an object",
		`{"metadata":{}}`:                                              "t.spec: missing",
		`{"spec":{"os":"linux"}}`:                                      "t.spec.os: not an object",
		`{"spec":{"containers":{}}}`:                                   "t.spec.containers: not a list",
		`{"spec":{"containers":["app"]}}`:                              "t.spec.containers[0]: not an object",
		`{"spec":{"initContainers":[{"image":"x"}]}}`:                  "t.spec.initContainers[0]: no name",
		`{"spec":{"containers":[{"name":"App"}]}}`:                     `t.spec.containers[0].name: "App" is not a container name: lower-case letters, digits and '-', starting and ending with a letter or digit (the API server refuses it too)`,
		`{"spec":{"containers":[{"name":"a","command":"/app"}]}}`:      "t.spec.containers[0].command: not a list",
		`{"spec":{"containers":[{"name":"a","args":[1]}]}}`:            "t.spec.containers[0].args[0]: not a string",
		`{"spec":{"containers":[{"name":"a","env":[{"value":"x"}]}]}}`: "t.spec.containers[0].env[0]: no name",
		`{"spec":{"containers":[{"name":"a","env":["A=x"]}]}}`:         "t.spec.containers[0].env[0]: not an object",
		`{"spec":{"containers":[{"name":"a","startupProbe":true}]}}`:   "t.spec.containers[0].startupProbe: not an object",
	} {
		if _, err := ReadPod(decode(t, obj), "t"); err == nil || err.Error() != msg {
			t.Errorf("ReadPod(%s)\n got %v\nwant %s", obj, err, msg)
		}
	}
}

func TestCheckContainerName(t *testing.T) {
	for name, ok := range map[string]bool{
		"app": true, "a": true, "a-1": true, "0x": true, strings.Repeat("a", 63): true,
		"": false, "App": false, "-a": false, "a-": false, "a_b": false, "a.b": false, strings.Repeat("a", 64): false, "é": false,
	} {
		if err := CheckContainerName(name); (err == nil) != ok {
			t.Errorf("CheckContainerName(%q) = %v, want ok %v", name, err, ok)
		}
	}
}

// TestDecodeJSONObject: one JSON object, as every reader of a pod decodes it, or an error that
// says what it is instead.
func TestDecodeJSONObject(t *testing.T) {
	got, err := DecodeJSONObject([]byte(` {"kind":"Pod","spec":{"n":1.50,"big":123456789012345678901234567890}} `))
	want := map[string]any{"kind": "Pod", "spec": map[string]any{"n": json.Number("1.50"), "big": json.Number("123456789012345678901234567890")}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("DecodeJSONObject = %#v, %v; want %#v", got, err, want)
	}
	for in, msg := range map[string]string{
		`{"kind":"Pod"} {}`: "the object is followed by more JSON",
		`null`:              "the object is null",
		`[{"kind":"Pod"}]`:  `the object is not a JSON object: [{"kind":"Pod"}]`,
		`{"kind":`:          "the object is not a JSON object: unexpected end of JSON input",
	} {
		if _, err := DecodeJSONObject([]byte(in)); err == nil || err.Error() != msg {
			t.Errorf("DecodeJSONObject(%s): %v, want %q", in, err, msg)
		}
	}
}

// TestObjectOf: a typed object becomes the decoded JSON a manifest is, numbers as json.Number
// (not the float64 and int64 that apimachinery's ToUnstructured makes of them).
func TestObjectOf(t *testing.T) {
	type exitCodes struct {
		Operator string  `json:"operator"`
		Values   []int32 `json:"values"`
	}
	type container struct {
		Name  string     `json:"name"`
		Codes *exitCodes `json:"exitCodes,omitempty"`
		Ratio float64    `json:"ratio"`
	}
	got, err := ObjectOf(struct {
		Kind       string      `json:"kind"`
		Containers []container `json:"containers"`
	}{"Pod", []container{{"a", &exitCodes{"In", []int32{42}}, 0.5}}})
	want := map[string]any{"kind": "Pod", "containers": []any{map[string]any{"name": "a", "ratio": json.Number("0.5"),
		"exitCodes": map[string]any{"operator": "In", "values": []any{json.Number("42")}}}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ObjectOf = %#v, %v\nwant %#v", got, err, want)
	}
}
