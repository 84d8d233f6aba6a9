//go:build linux

package nodejobs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// The restart tests run Jobs whose app container the kubelet restarts in place (a container
// restart rule, or the pod's OnFailure), and one that a podFailurePolicy fails, all with OSM's
// Envoy (emulated) added by the mesh stand-in after `kubectl sidesync inject` wrapped the app:
// sidesync keeps the sidecar up across a restart in place and tells it to quit only at the
// container's last exit (README "Restarts", docs/KUBERNETES.md 2).

// restartApp is the wrapped app's container name in these Jobs, and restartImage its image (the
// stand-in program as dotnet, told to check Envoy's /ready at start).
const (
	restartApp   = "job"
	restartImage = "registry.example.com/billing/invoice-export:2.3.0"
)

// restartJob describes a plain Job (before inject) for the restart tests.
type restartJob struct {
	name          string
	podPolicy     string            // the pod's restartPolicy
	backoffLimit  int               // the Job's
	env           map[string]string // the app's environment (APP_*)
	container     map[string]any    // fields added to the app container (restartPolicy, rules)
	failurePolicy map[string]any    // the Job's podFailurePolicy, if any
}

// manifest is the plain Job as YAML: OSM's injection annotation, Pod Security restricted, an
// emptyDir at /state for APP_RUNS.
func (j restartJob) manifest(t *testing.T) []byte {
	t.Helper()
	var env []any
	for _, k := range sortedKeys(j.env) {
		env = append(env, map[string]any{"name": k, "value": j.env[k]})
	}
	app := map[string]any{
		"name": restartApp, "image": restartImage,
		"command": []any{"dotnet", "InvoiceExport.dll"},
		"env":     env,
		"volumeMounts": []any{
			map[string]any{"name": "state", "mountPath": "/state"},
		},
		"securityContext": map[string]any{
			"allowPrivilegeEscalation": false,
			"capabilities":             map[string]any{"drop": []any{"ALL"}},
		},
	}
	for k, v := range j.container {
		app[k] = v
	}
	spec := map[string]any{
		"backoffLimit": j.backoffLimit,
		"template": map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{"openservicemesh.io/sidecar-injection": "enabled"}},
			"spec": map[string]any{
				"restartPolicy": j.podPolicy,
				"securityContext": map[string]any{
					"runAsNonRoot": true, "runAsUser": 10001,
					"seccompProfile": map[string]any{"type": "RuntimeDefault"},
				},
				"containers": []any{app},
				"volumes":    []any{map[string]any{"name": "state", "emptyDir": map[string]any{}}},
			},
		},
	}
	if j.failurePolicy != nil {
		spec["podFailurePolicy"] = j.failurePolicy
	}
	data, err := yaml.Marshal(map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": j.name},
		"spec":     spec,
	})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// injectRestartJob runs the built kubectl-sidesync inject on the plain manifest, as a user
// would, and checks that it handed the wrapper the restart settings the kubelet will follow.
func injectRestartJob(t *testing.T, plain []byte, wantEnv ...string) []byte {
	t.Helper()
	file := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(file, plain, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bins, "kubectl-sidesync"), "inject", "-f", file, "--image", sidesyncImage)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl sidesync inject: %v\n%s", err, stderr.String())
	}
	for _, want := range wantEnv {
		if !strings.Contains(string(out), want) {
			t.Fatalf("kubectl sidesync inject: the output has no %s:\n%s", want, out)
		}
	}
	return out
}

// runRestartJob creates the injected Job in ns, waits for its final condition, checks that it
// is want, and returns the Job and its one pod.
func runRestartJob(t *testing.T, n *kubetest.Node, ns string, stream []byte, want string) (jobState, pod) {
	t.Helper()
	name := createOne(t, n, ns, "Job", stream)
	p := waitJob(t, n, ns, name, want, time.Now())
	return getJob(t, n, ns, name), p
}

// restartCondition returns the Job's True condition of type typ, or fails the test.
func restartCondition(t *testing.T, j jobState, typ string) (reason, message string) {
	t.Helper()
	for _, c := range j.Status.Conditions {
		if c.Type == typ && c.Status == "True" {
			return c.Reason, c.Message
		}
	}
	t.Fatalf("the Job has no %s condition: %+v", typ, j.Status.Conditions)
	return "", ""
}

// Log lines the tests look for, in the kubelet's CRI format ("TIME stdout F line").
var (
	logAppCheckedOK = `app: check ` + regexp.QuoteMeta(readyURL("osm")) + ` 2\d\d`
	logSidecarReady = `INFO sidecar ready `
	logSidecarQuit  = `INFO sidecar quit `
	logQuitSkipped  = `not telling the sidecars to quit: the kubelet restarts this container in place after exit `
	logEnvoyQuit    = `(?m) (stdout|stderr) F quit t=`
	logPeersHeld    = `INFO not telling the sidecars to quit: other wrapped containers still run`
)

// restartSummaries are the termination messages of a container's last run and of the one
// before it, from the API. sidesync appends its one-line summary there ("sidesync: exit 42
// (command exited 42); ...; quit skipped (restart) in 0s"), and the pod's status keeps it after
// the kubelet has removed that run's container and log: it keeps one dead container per
// container name, so a run's log file goes when the next run ends.
func restartSummaries(t *testing.T, n *kubetest.Node, ns, podName, container string) (last, previous string) {
	t.Helper()
	p := getPod(t, n, ns, podName)
	if st := p.status(container); st != nil {
		if st.State.Terminated != nil {
			last = st.State.Terminated.Message
		}
		if st.LastState.Terminated != nil {
			previous = st.LastState.Terminated.Message
		}
	}
	return last, previous
}

// checkRestartedRun checks a pod whose app exited firstCode, was restarted in place by the
// kubelet and then exited 0: the first run's sidesync left the sidecar running (its summary says
// "quit skipped (restart)"), the second found it ready at once and told it to quit, and the
// sidecar, never restarted, quit exactly once by its protocol, after the second run had started.
func checkRestartedRun(t *testing.T, n *kubetest.Node, ns string, p pod, firstCode int) {
	t.Helper()
	code := strconv.Itoa(firstCode)
	log := terminated(t, n, ns, p, restartApp, 0)
	app := p.status(restartApp)
	if app.RestartCount != 1 {
		t.Errorf("%s restarted %d times, want 1 (in place): %s", restartApp, app.RestartCount, describe(p))
	}
	last := app.LastState.Terminated
	if last == nil || last.ExitCode != firstCode {
		t.Fatalf("%s's first run: %+v, want exit %d: %s", restartApp, last, firstCode, describe(p))
	}
	final, first := restartSummaries(t, n, ns, p.Metadata.Name, restartApp)
	t.Logf("%s's runs: %q, then %q", restartApp, first, final)
	mustContain(t, "the first run's termination message", first,
		`^sidesync: exit `+code+` \(command exited `+code+`\); sidecar ready after .*; quit skipped \(restart\) `)
	mustContain(t, "the last run's termination message", final,
		`^sidesync: exit 0 \(command exited 0\); sidecar ready after .*; quit ok `)
	// The log of the last run (the kubelet removed the first run's): it found the sidecar
	// ready at once, as the app's own check says, and told it to quit.
	mustContain(t, "the second run", log, `app: run 1\b`)
	mustContain(t, "the second run", log, logSidecarReady+`sidecar=osm .* probes=1\b`)
	mustContain(t, "the second run", log, logAppCheckedOK)
	mustContain(t, "the second run", log, `app: exit 0\b`)
	mustContain(t, "the second run", log, logSidecarQuit)
	mustContain(t, "the second run", log, `INFO done exit=0 .* quit=ok `)
	if strings.Contains(log, "app: run 0") {
		t.Errorf("the last log holds the first run; want only the second:\n%s", log)
	}

	sc := sidecarContainer("osm")
	scLog := terminated(t, n, ns, p, sc, 0)
	st := p.status(sc)
	if st.RestartCount != 0 {
		t.Errorf("the sidecar %s restarted %d times, want 0: %s", sc, st.RestartCount, describe(p))
	}
	if c := countLines(scLog, logEnvoyQuit); c != 1 {
		t.Errorf("the sidecar %s quit %d times, want once:\n%s", sc, c, scLog)
	}
	// It ran from before the first run's exit until after the second run started (RFC 3339 in
	// whole seconds, UTC: the strings compare as the times do, and equal is allowed).
	if st.State.Terminated.StartedAt > last.FinishedAt {
		t.Errorf("the sidecar started at %s, after the first run ended at %s", st.State.Terminated.StartedAt, last.FinishedAt)
	}
	if st.State.Terminated.FinishedAt < app.State.Terminated.StartedAt {
		t.Errorf("the sidecar ended at %s, before the second run started at %s", st.State.Terminated.FinishedAt, app.State.Terminated.StartedAt)
	}
}

// checkFinalRun checks a pod whose app ran once and exited code for good: sidesync told the
// sidecar to quit, and it quit by its protocol with exit 0.
func checkFinalRun(t *testing.T, n *kubetest.Node, ns string, p pod, code int) string {
	t.Helper()
	log := terminated(t, n, ns, p, restartApp, code)
	if app := p.status(restartApp); app.RestartCount != 0 {
		t.Errorf("%s restarted %d times, want 0: %s", restartApp, app.RestartCount, describe(p))
	}
	c := strconv.Itoa(code)
	final, _ := restartSummaries(t, n, ns, p.Metadata.Name, restartApp)
	mustContain(t, "the termination message", final,
		`^sidesync: exit `+c+` \(command exited `+c+`\); sidecar ready after .*; quit ok `)
	mustContain(t, restartApp, log, logSidecarReady)
	mustContain(t, restartApp, log, logAppCheckedOK)
	mustContain(t, restartApp, log, `app: exit `+c+`\b`)
	mustContain(t, restartApp, log, logSidecarQuit)
	mustContain(t, restartApp, log, `INFO done exit=`+c+` `)
	if strings.Contains(log, logQuitSkipped) {
		t.Errorf("sidesync thought the kubelet restarts the container after exit %d:\n%s", code, log)
	}
	sc := sidecarContainer("osm")
	scLog := terminated(t, n, ns, p, sc, 0)
	if c := countLines(scLog, logEnvoyQuit); c != 1 {
		t.Errorf("the sidecar %s quit %d times, want once:\n%s", sc, c, scLog)
	}
	return log
}

// restartOn42 is the app container's restart rule of these tests: restart in place after 42,
// in a pod whose restartPolicy is Never (a container with rules must say its policy itself).
var restartOn42 = map[string]any{
	"restartPolicy": "Never",
	"restartPolicyRules": []any{map[string]any{
		"action": "Restart", "exitCodes": map[string]any{"operator": "In", "values": []any{42}},
	}},
}

// TestRestartRules runs Jobs whose app container has the restart rule "Restart on 42" in a
// restartPolicy Never pod (Kubernetes 1.35+). Exit 42 then 0: the kubelet restarts the app in
// place, sidesync leaves the sidecar running after the 42, the second run finds it ready at
// once, and the 0 quits it; the Job completes. Exit 3, outside the rule: that exit is final,
// sidesync tells the sidecar to quit, and the Job fails.
func TestRestartRules(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	injector(t, n)
	t.Run("matching-exit-restarts", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, n, "restart-rules-match")
		plain := restartJob{name: "rules", podPolicy: "Never", backoffLimit: 0, container: restartOn42,
			env: map[string]string{"APP_RUNS": "/state/runs", "APP_EXITS": "42,0"}}.manifest(t)
		stream := injectRestartJob(t, plain, "SIDESYNC_RESTART_POLICY", "SIDESYNC_RESTART_RULES")
		job, p := runRestartJob(t, n, ns, stream, "Complete")
		checkRestartedRun(t, n, ns, p, 42)
		if job.Status.Succeeded != 1 || job.Status.Failed != 0 {
			t.Errorf("Job: %d succeeded, %d failed; want 1 and 0", job.Status.Succeeded, job.Status.Failed)
		}
	})
	t.Run("other-exit-ends", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, n, "restart-rules-other")
		plain := restartJob{name: "rules", podPolicy: "Never", backoffLimit: 0, container: restartOn42,
			env: map[string]string{"APP_RUNS": "/state/runs", "APP_EXITS": "3,0"}}.manifest(t)
		stream := injectRestartJob(t, plain, "SIDESYNC_RESTART_RULES")
		job, p := runRestartJob(t, n, ns, stream, "Failed")
		checkFinalRun(t, n, ns, p, 3)
		if reason, _ := restartCondition(t, job, "Failed"); reason != "BackoffLimitExceeded" {
			t.Errorf("the Job failed with reason %q, want BackoffLimitExceeded", reason)
		}
		if p.Status.Phase != "Failed" {
			t.Errorf("pod phase %s, want Failed", p.Status.Phase)
		}
	})
}

// TestRestartOnFailure runs a Job of restartPolicy OnFailure whose app fails once (exit 1) and
// then succeeds: the kubelet restarts it in place, sidesync keeps the sidecar up across the
// restart and tells it to quit after the exit 0, and the Job completes.
func TestRestartOnFailure(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	injector(t, n)
	ns := namespace(t, n, "restart-onfailure")
	plain := restartJob{name: "onfailure", podPolicy: "OnFailure", backoffLimit: 3,
		env: map[string]string{"APP_RUNS": "/state/runs", "APP_EXITS": "1,0"}}.manifest(t)
	stream := injectRestartJob(t, plain, "SIDESYNC_RESTART_POLICY")
	job, p := runRestartJob(t, n, ns, stream, "Complete")
	checkRestartedRun(t, n, ns, p, 1)
	if job.Status.Succeeded != 1 {
		t.Errorf("Job: %d succeeded, want 1", job.Status.Succeeded)
	}
	if p.Status.Phase != "Succeeded" {
		t.Errorf("pod phase %s, want Succeeded", p.Status.Phase)
	}
}

// TestRestartPodFailurePolicy runs a Job whose podFailurePolicy fails it on the app container's
// exit 69 (containerName, as the README advises), with backoff to spare: the app exits 69, the
// Job fails at once with reason PodFailurePolicy on the app's code, and the sidecar was told to
// quit and exited 0, not 137 or 143: Envoy's code cannot trip the rule, nor any other.
func TestRestartPodFailurePolicy(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	injector(t, n)
	ns := namespace(t, n, "restart-pod-failure-policy")
	plain := restartJob{name: "pfp", podPolicy: "Never", backoffLimit: 3,
		env: map[string]string{"APP_EXIT": "69"},
		failurePolicy: map[string]any{"rules": []any{map[string]any{
			"action":      "FailJob",
			"onExitCodes": map[string]any{"containerName": restartApp, "operator": "In", "values": []any{69}},
		}}}}.manifest(t)
	stream := injectRestartJob(t, plain)
	job, p := runRestartJob(t, n, ns, stream, "Failed")
	log := checkFinalRun(t, n, ns, p, 69)
	reason, msg := restartCondition(t, job, "Failed")
	t.Logf("the Job's Failed condition: %s: %s", reason, msg)
	if reason != "PodFailurePolicy" {
		t.Errorf("the Job failed with reason %q (%s), want PodFailurePolicy", reason, msg)
	}
	if !strings.Contains(msg, "Container "+restartApp+" ") || !strings.Contains(msg, "exit code 69") {
		t.Errorf("the Job's Failed condition does not name %s's exit 69: %q", restartApp, msg)
	}
	if job.Status.Failed != 1 {
		t.Errorf("Job: %d failed pods, want 1 (FailJob at the first, with backoff to spare)", job.Status.Failed)
	}
	// 69 is the app's own code here, not sidesync's "no sidecar": the sidecar was ready.
	mustContain(t, restartApp, log, `INFO done exit=69 outcome="command exited 69" sidecar=ready `)
}
