package inject

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/catalog"
	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/shared/manifest"
	"github.com/sidesync/sidesync/internal/testing/celeval"
)

// The differential test of inject's two renderings of its own rules (own.go, plan.go): clash
// and ClashCEL, wrapped and WrappedCEL, wrappable and wrappableCEL, hasCommand and
// HasCommandCEL, ownedEnv and OwnedEnvCEL, below and belowCEL. Each predicate's Go and its CEL,
// evaluated as the API server evaluates it (internal/testing/celeval), must agree on every pod,
// container, env entry and mount path of the corpus, the examples, inject's testdata and the
// synthetic pods below, which reach the branches the real ones do not; and each broken CEL of
// brokenCEL must disagree somewhere, so that the cases can tell a wrong rendering.

// celPod is how the admission policy binds the pod's annotations and labels for the catalog's
// CEL (its variables ann and lbl).
var celPod = catalog.CELPod{Annotations: "variables.ann", Labels: "variables.lbl"}

// syntheticCELPods reach each branch of the rules: every name and path inject owns, used where
// inject would and would not put it, by apps that it would and would not wrap, by sidecars and
// init containers; every variable it owns; commands empty, missing, wrapped and nearly so.
var syntheticCELPods = []string{
	// Volumes: each owned name, whatever its source, and names that nearly match.
	`{spec: {volumes: [{name: sidesync-bin, emptyDir: {}}], containers: [{name: job, image: app, command: [/app]}]}}`,
	`{spec: {volumes: [{name: sidesync-podinfo, secret: {secretName: s}}], containers: [{name: job, image: app, command: [/app]}]}}`,
	`{spec: {volumes: [{name: sidesync-state}], containers: [{name: job, image: app, command: [/app]}]}}`,
	`{spec: {volumes: [{name: sidesync-binx, emptyDir: {}}, {name: sidesync, emptyDir: {}}, {name: Sidesync-bin, emptyDir: {}}], containers: [{name: job, image: app, command: [/app]}]}}`,
	// The install container's name: on an init container, a regular one, a sidecar; and near it.
	`{spec: {initContainers: [{name: sidesync-install, image: ghcr.io/sidesync/sidesync, command: [/sidesync, install, /sidesync-install]}], containers: [{name: job, image: app, command: [/app]}]}}`,
	`{spec: {containers: [{name: job, image: app, command: [/app]}, {name: sidesync-install, image: x}]}}`,
	`{spec: {initContainers: [{name: sidesync-install, image: x, restartPolicy: Always}], containers: [{name: job, image: app}]}}`,
	`{spec: {initContainers: [{name: sidesync-installer, image: x}], containers: [{name: sidesync-instal, image: app, command: [/app]}]}}`,
	// Mounts of owned volumes by containers inject does not wrap (a sidecar, an init container,
	// an app that runs sidesync by hand) and by ones it does (an app, a wrapped app).
	`{metadata: {annotations: {sidecar.istio.io/status: "{}"}}, spec: {containers: [{name: job, image: app, command: [/app]}, {name: istio-proxy, image: istio/proxyv2, volumeMounts: [{name: sidesync-podinfo, mountPath: /etc/podinfo}]}]}}`,
	`{spec: {initContainers: [{name: migrate, image: m, volumeMounts: [{name: sidesync-bin, mountPath: /bin2}]}], containers: [{name: job, image: app, command: [/app]}]}}`,
	`{spec: {containers: [{name: job, image: app, command: [/usr/local/bin/sidesync, --, /app], volumeMounts: [{name: sidesync-state, mountPath: /state}]}]}}`,
	`{spec: {containers: [{name: job, image: app, command: [/app], volumeMounts: [{name: sidesync-bin, mountPath: /sidesync/bin, readOnly: true}]}]}}`,
	`{spec: {containers: [{name: job, image: app, command: [/sidesync/bin/sidesync], args: [--, /app], volumeMounts: [{name: sidesync-bin, mountPath: /sidesync/bin}, {name: sidesync-podinfo, mountPath: /sidesync/podinfo}]}]}}`,
	`{spec: {containers: [{name: job, image: app, command: [/app], volumeMounts: [{name: sidesync-binx, mountPath: /opt}, {name: data, mountPath: /data}]}]}}`,
	// Mounts below /sidesync of volumes of the user's: in apps inject wraps (however the path is
	// spelled), in one wrapped before, in one that runs sidesync by hand, in a sidecar, in an init
	// container, in a native sidecar; paths that only look like it.
	`{spec: {containers: [{name: job, image: app, command: [/app], volumeMounts: [{name: data, mountPath: /sidesync}]}]}}`,
	`{spec: {containers: [{name: job, image: app, command: [/app], volumeMounts: [{name: data, mountPath: /sidesync/}]}]}}`,
	`{spec: {containers: [{name: job, image: app, volumeMounts: [{name: data, mountPath: /sidesync//x}]}]}}`,
	`{spec: {containers: [{name: job, image: app, command: [/app]}, {name: two, image: app, command: [/app], volumeMounts: [{name: data, mountPath: /sidesync/bin/tools}]}]}}`,
	`{spec: {containers: [{name: job, image: app, command: [/sidesync/bin/sidesync], volumeMounts: [{name: data, mountPath: /sidesync/cache}]}]}}`,
	`{spec: {containers: [{name: job, image: app, command: [/opt/sidesync], volumeMounts: [{name: data, mountPath: /sidesync/cache}]}]}}`,
	`{spec: {containers: [{name: job, image: app, command: [/app]}, {name: db, image: gcr.io/cloud-sql-connectors/cloud-sql-proxy:2, volumeMounts: [{name: data, mountPath: /sidesync/x}]}]}}`,
	`{spec: {initContainers: [{name: migrate, image: m, volumeMounts: [{name: data, mountPath: /sidesync}]}, {name: proxy, image: p, restartPolicy: Always, volumeMounts: [{name: data, mountPath: /sidesync/p}]}], containers: [{name: job, image: app, command: [/app]}]}}`,
	`{spec: {containers: [{name: job, image: app, command: [/app], volumeMounts: [{name: a, mountPath: /sidesyncx}, {name: b, mountPath: //sidesync}, {name: c, mountPath: /opt/sidesync}, {name: d, mountPath: sidesync/x}, {name: e, mountPath: "/"}, {name: f, mountPath: "/sidesync\n/x"}, {name: g, mountPath: /sidesync-install}, {name: h, mountPath: /Sidesync}]}]}}`,
	`{metadata: {labels: {tekton.dev/taskRun: run-1}}, spec: {containers: [{name: step-build, image: app, command: [/app]}, {name: sidecar-db, image: postgres, volumeMounts: [{name: data, mountPath: /sidesync}]}]}}`,
	// Variables inject owns, in apps, sidecars and init containers, and names near them.
	`{spec: {containers: [{name: job, image: app, command: [/app], env: [{name: SIDESYNC_RESTART_POLICY, value: Never}, {name: X, value: "1"}]}]}}`,
	`{spec: {containers: [{name: job, image: app, command: [/app], env: [{name: SIDESYNC_RESTART_RULES, valueFrom: {configMapKeyRef: {name: c, key: k}}}]}]}}`,
	`{spec: {containers: [{name: job, image: app, command: [/app], env: [{name: SIDESYNC_PLATFORM_COMMANDS, value: "{}"}, {name: SIDESYNC_SIDECARS, value: istio}]}]}}`,
	`{spec: {initContainers: [{name: migrate, image: m, env: [{name: SIDESYNC_RESTART_POLICY, value: Always}]}], containers: [{name: job, image: app, command: [/app], env: [{name: sidesync_restart_policy, value: Never}, {name: SIDESYNC_RESTART_POLICYX}, {name: SIDESYNC_RESTART}]}]}}`,
	// Commands: none, empty, an empty word, wrapped, wrapped with more, nearly wrapped.
	`{spec: {containers: [{name: job, image: app}, {name: two, image: app, command: []}, {name: three, image: app, command: [""]}]}}`,
	`{spec: {containers: [{name: job, image: app, command: [/sidesync/bin/sidesync]}, {name: two, image: app, command: [/sidesync/bin/sidesync, --, /app]}, {name: three, image: app, command: [/sidesync]}]}}`,
	`{spec: {initContainers: [{name: wrapped-init, image: app, command: [/sidesync/bin/sidesync]}], containers: [{name: job, image: app, command: [sidesync]}, {name: two, image: app, command: [/sidesync/bin/sidesync/]}, {name: three, image: app, args: [/sidesync/bin/sidesync]}]}}`,
}

// celCase is a pod to evaluate both renderings over: as Go reads it and as CEL sees it.
type celCase = celeval.Pod

// container is the CEL object of the pod's i'th container, as manifest.PodView.All lists them:
// its init containers, then its others.
func container(t *testing.T, c celCase, i int) map[string]any {
	t.Helper()
	m := c.Container(i)
	if name := c.View.All()[i].Name; m["name"] != name {
		t.Fatalf("%s: container %d is %v as CEL sees it, %s as Go does", c.Name, i, m["name"], name)
	}
	return m
}

// celCases are the pods of celeval.Pods and the synthetic ones.
func celCases(t *testing.T) []celCase { return celeval.WithSynthetic(t, syntheticCELPods) }

// renderings are the CEL renderings under test; brokenCEL changes one at a time.
type renderings struct {
	clash      func(spec, apps string) string
	wrapped    func(c string) string
	wrappable  func(c string) string
	hasCommand func(c string) string
	ownedEnv   func(e string) string
	below      func(path string) string
}

var realCEL = renderings{
	clash:      ClashCEL,
	wrapped:    WrappedCEL,
	wrappable:  wrappableCEL,
	hasCommand: HasCommandCEL,
	ownedEnv:   OwnedEnvCEL,
	below:      func(path string) string { return belowCEL(path, contract.Owned) },
}

// answers counts, per predicate, how often the Go said true and false.
type answers map[string]*[2]int

func (a answers) add(what string, v bool) {
	if a[what] == nil {
		a[what] = &[2]int{}
	}
	if v {
		a[what][1]++
	} else {
		a[what][0]++
	}
}

// syntheticPaths are mount paths beside those of the pods, for below and belowCEL.
var syntheticPaths = []string{"", "/", "/sidesync", "/sidesync/", "/sidesync//", "/sidesync/bin", "/sidesync/bin/",
	"/sidesyncx", "/sidesync-install", "//sidesync", "/opt/sidesync", "sidesync", "sidesync/", "/sidesync\n", "/sidesync\n/x",
	"/Sidesync", "/sidesync.", "/sidesync/.", "/sidesync/..", "/sidesync/../etc"}

// run is one evaluation of renderings over the cases: the disagreements found, the answers the
// Go gave.
type run struct {
	t     *testing.T
	e     *celeval.Env
	r     renderings
	diffs []string
	seen  answers
}

func (u *run) eval(where, expr string, object, vars map[string]any) bool {
	u.t.Helper()
	v, err := u.e.Bool(expr, object, vars)
	if err != nil {
		u.t.Fatalf("%s: %v", where, err)
	}
	return v
}

// check records the Go's answer want, and a disagreement when the CEL's is not it.
func (u *run) check(where, what string, want bool, expr string, object, vars map[string]any) {
	u.t.Helper()
	u.seen.add(what, want)
	if got := u.eval(where, expr, object, vars); got != want {
		if len(expr) > 400 {
			expr = expr[:400] + "..."
		}
		u.diffs = append(u.diffs, fmt.Sprintf("%s: %s: Go says %v, CEL says %v\nCEL: %s", where, what, want, got, expr))
	}
}

// checkBelow compares below and its CEL on one path.
func (u *run) checkBelow(where, path string) {
	u.t.Helper()
	u.check(fmt.Sprintf("%s, path %q", where, path), "below", below(path, contract.Owned), u.r.below("variables.path"), nil, map[string]any{"path": path})
}

// disagreements evaluates r over every case and returns where the CEL and the Go differ, with
// the answers the Go gave.
func disagreements(t *testing.T, cases []celCase, r renderings) ([]string, answers) {
	t.Helper()
	k, err := catalog.NewSortCEL(celPod)
	if err != nil {
		t.Fatal(err)
	}
	u := &run{t: t, e: celeval.For(t), r: r, seen: answers{}}
	for _, c := range cases {
		vars := c.Vars()
		for _, v := range k.Variables() {
			vars[v.Name] = u.eval(c.Name, v.Expression, c.Object, vars)
		}
		// The apps as the policy tells them (catalog.SortCEL.Claim), and the pod as the policy
		// sees it: without contract.InjectedAnnotation (its match condition), so that a pod inject
		// wrapped before clashes here on both sides.
		apps := "object.spec.containers.filter(c, " + k.Claim("c") + " == -1)"
		p := &plan{pod: c.View, sorted: catalog.Sort(c.View, catalog.Options{Requests: true})}
		clash := false
		if err := p.clash(); err != nil {
			if !strings.Contains(err.Error(), "belongs to sidesync") {
				t.Fatalf("%s: clash: %v", c.Name, err)
			}
			clash = true
		}
		u.check(c.Name, "clash", clash, r.clash("object.spec", apps), c.Object, vars)
		var paths []string
		for i, ct := range c.View.All() {
			where := c.Name + ", container " + ct.Name
			object := container(t, c, i)
			vars["container"] = object
			at := func(expr string) string { return "[variables.container].map(c, " + expr + ")[0]" }
			u.check(where, "wrapped", wrapped(ct), at(r.wrapped("c")), c.Object, vars)
			u.check(where, "wrappable", wrappable(ct), at(r.wrappable("c")), c.Object, vars)
			u.check(where, "hasCommand", hasCommand(ct), at(r.hasCommand("c")), c.Object, vars)
			env, err := manifest.ListAt(ct.M, "env", ct.Path)
			if err != nil {
				t.Fatal(err)
			}
			celEnv, _ := object["env"].([]any)
			if len(env) != len(celEnv) {
				t.Fatalf("%s: %d env entries as Go reads them, %d as CEL sees them", where, len(env), len(celEnv))
			}
			for j, entry := range env {
				u.check(fmt.Sprintf("%s, env[%d]", where, j), "ownedEnv", ownedEnv(entry), r.ownedEnv("variables.e"), nil, map[string]any{"e": celEnv[j]})
			}
			mounts, err := manifest.ListAt(ct.M, "volumeMounts", ct.Path)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range mounts {
				if m, ok := m.(map[string]any); ok {
					paths = append(paths, manifest.Str(m, "mountPath"))
				}
			}
		}
		for _, path := range paths {
			u.checkBelow(c.Name, path)
		}
	}
	for _, path := range syntheticPaths {
		u.checkBelow("synthetic path", path)
	}
	return u.diffs, u.seen
}

// TestCELOwn: inject's rules and their CEL agree on every pod, and the cases reach both answers
// of every rule.
func TestCELOwn(t *testing.T) {
	cases := celCases(t)
	diffs, seen := disagreements(t, cases, realCEL)
	for _, d := range diffs {
		t.Error(d)
	}
	for _, what := range []string{"clash", "wrapped", "wrappable", "hasCommand", "ownedEnv", "below"} {
		n := seen[what]
		if n == nil || n[0] < 3 || n[1] < 3 {
			t.Errorf("%s: the cases give false and true %v times: they do not reach both answers", what, n)
		}
	}
	t.Logf("%d pods (%d synthetic); false and true per predicate: clash %v, wrapped %v, wrappable %v, hasCommand %v, ownedEnv %v, below %v",
		len(cases), len(syntheticCELPods), *seen["clash"], *seen["wrapped"], *seen["wrappable"], *seen["hasCommand"], *seen["ownedEnv"], *seen["below"])
}

// brokenCEL breaks a copy of the renderings, each entry in one way the cases must catch: a name,
// a path or a clause of ClashCEL forgotten, a near miss in each of the others.
var brokenCEL = map[string]func(r *renderings){
	"clash forgets a volume name": func(r *renderings) {
		r.clash = func(spec, apps string) string {
			return strings.ReplaceAll(ClashCEL(spec, apps), catalog.CELString(contract.StateVolume), catalog.CELString("not-"+contract.StateVolume))
		}
	},
	"clash forgets the install container": func(r *renderings) {
		r.clash = func(spec, apps string) string {
			return strings.ReplaceAll(ClashCEL(spec, apps), "c.name == "+catalog.CELString(contract.InitContainer), "false")
		}
	},
	"clash forgets mounts of its volumes": func(r *renderings) {
		r.clash = func(spec, apps string) string {
			return strings.ReplaceAll(ClashCEL(spec, apps), "c.volumeMounts.exists(m, m.name in", "c.volumeMounts.exists(m, false && m.name in")
		}
	},
	"clash forgets init containers": func(r *renderings) {
		r.clash = func(spec, apps string) string {
			return strings.Replace(ClashCEL(spec, apps), spec+".initContainers.exists(c,", spec+".initContainers.exists(c, false &&", 1)
		}
	},
	"clash forgets paths below /sidesync": func(r *renderings) {
		r.clash = func(spec, apps string) string {
			return strings.ReplaceAll(ClashCEL(spec, apps), belowCEL("m.mountPath", contract.Owned), "false")
		}
	},
	"clash checks paths in every container": func(r *renderings) {
		r.clash = func(spec, apps string) string {
			return strings.ReplaceAll(ClashCEL(spec, apps), apps+".exists(c, ", spec+".containers.exists(c, ")
		}
	},
	"clash checks paths in apps that run sidesync by hand": func(r *renderings) {
		r.clash = func(spec, apps string) string {
			return strings.ReplaceAll(ClashCEL(spec, apps), wrappableCEL("c"), "true")
		}
	},
	"wrapped takes any command that runs sidesync": func(r *renderings) { r.wrapped = func(c string) string { return contract.RunsSidesyncCEL(c) } },
	"wrapped takes the binary first": func(r *renderings) {
		r.wrapped = func(c string) string {
			return "(has(" + c + ".command) && size(" + c + ".command) > 0 && " + c + ".command[0] == " + catalog.CELString(contract.Binary) + ")"
		}
	},
	"wrappable ignores wrapped":         func(r *renderings) { r.wrappable = func(c string) string { return "!" + contract.RunsSidesyncCEL(c) } },
	"hasCommand takes an empty command": func(r *renderings) { r.hasCommand = func(c string) string { return "has(" + c + ".command)" } },
	"ownedEnv forgets the platform commands": func(r *renderings) {
		r.ownedEnv = func(e string) string {
			return "(" + e + ".name in " + catalog.CELList(restartEnvNames) + ")"
		}
	},
	"ownedEnv takes every SIDESYNC_ variable": func(r *renderings) { r.ownedEnv = func(e string) string { return e + `.name.startsWith("SIDESYNC_")` } },
	"below takes a prefix": func(r *renderings) {
		r.below = func(path string) string { return path + ".startsWith(" + catalog.CELString(contract.Owned) + ")" }
	},
	"below forgets the directory itself": func(r *renderings) {
		r.below = func(path string) string { return path + ".startsWith(" + catalog.CELString(contract.Owned+"/") + ")" }
	},
}

// TestCELOwnBroken: each broken rendering disagrees with the Go on some case, so TestCELOwn
// would fail on it.
func TestCELOwnBroken(t *testing.T) {
	cases := celCases(t)
	for name, breakOne := range brokenCEL {
		t.Run(name, func(t *testing.T) {
			r := realCEL
			breakOne(&r)
			if diffs, _ := disagreements(t, cases, r); len(diffs) == 0 {
				t.Errorf("no case tells the broken CEL from the Go")
			}
		})
	}
}
