package lint

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The rules named in the catalog's rows, spelt as users see them.
const (
	RuleLinkerdShutdown = "linkerd-shutdown-off"
	RuleCloudSQLQuit    = "cloudsql-no-quitquitquit"
	RuleCloudSQLHealth  = "cloudsql-no-health-check"
	RuleVaultQuit       = "vault-quit-off"
)

// Containers and pods for the test tables, in YAML's flow style.
const (
	app        = `{name: job, image: example/report:1.0, command: [python, job.py]}`
	wrapped    = `{name: job, image: example/report:1.0, command: [/sidesync/bin/sidesync, "--"], args: [python, job.py]}`
	istioProxy = `{name: istio-proxy, image: docker.io/istio/proxyv2:1.27.0}`
	quitCurl   = `{name: job, image: curlimages/curl, command: [sh, -c, "python job.py; curl -X POST localhost:15020/quitquitquit"]}`
	noAnn      = `{}`
)

// job is a Job called report whose pod has these annotations and this spec (flow style).
func job(annotations, spec string) string {
	return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: report}\nspec:\n  template:\n" +
		"    metadata: {annotations: " + annotations + "}\n    spec: " + spec + "\n"
}

// jobWith is job with a Job spec field besides the template (flow style), e.g. a podFailurePolicy.
func jobWith(jobField, annotations, spec string) string {
	return strings.Replace(job(annotations, spec), "spec:\n  template:", "spec:\n  "+jobField+"\n  template:", 1)
}

// podYAML is a Pod called web with these annotations and this spec.
func podYAML(annotations, spec string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: web, annotations: " + annotations + "}\nspec: " + spec + "\n"
}

// containers is a pod spec with restartPolicy Never and these containers.
func containers(cs ...string) string {
	return "{restartPolicy: Never, containers: [" + strings.Join(cs, ", ") + "]}"
}

// short is what the tables compare of a finding.
type short struct {
	Severity  Severity
	Rule      string
	Container string
}

func shorten(fs []Finding) []short {
	out := []short{}
	for _, f := range fs {
		out = append(out, short{f.Severity, f.Rule, f.Container})
	}
	return out
}

// lintCase is a row of a table: a manifest of one object, and the findings it must give.
type lintCase struct {
	name     string
	manifest string
	want     []short
}

// lintOne decodes a manifest that holds one object and lints it.
func lintOne(t *testing.T, manifest string) []Finding {
	t.Helper()
	objs, err := Decode([]byte(manifest))
	if err != nil || len(objs) != 1 {
		t.Fatalf("Decode = %d objects, %v; want one\n%s", len(objs), err, manifest)
	}
	return Lint(objs[0])
}

func runCases(t *testing.T, cases []lintCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			fs := lintOne(t, tt.manifest)
			want := tt.want
			if want == nil {
				want = []short{}
			}
			if diff := cmp.Diff(want, shorten(fs)); diff != "" {
				t.Errorf("findings (-want +got):\n%s\nall:\n%s", diff, lines(fs))
			}
		})
	}
}

func lines(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.String() + "\n")
	}
	return b.String()
}

// Shorthands for the wanted findings.
func errorOf(rule, container string) short   { return short{Error, rule, container} }
func warningOf(rule, container string) short { return short{Warning, rule, container} }

var (
	noSidecar  = short{Info, RuleNoSidecar, ""}
	nativeOnly = short{Info, RuleNativeWithProbes, ""}
)
