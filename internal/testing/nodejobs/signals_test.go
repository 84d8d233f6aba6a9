//go:build linux

package nodejobs

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// Deleting a running pod, as `kubectl delete pod`, a drain or a rollout does: the kubelet sends
// SIGTERM to every container at once, sidesync (PID 1 of the app's container) forwards it to the
// app, and the kubelet SIGKILLs whatever is left at the grace period. These tests run that on the
// node with an injected Job whose pod the mesh stand-in gives OSM's Envoy (emulated), and read
// how every container ended.
//
// How the final states are read: a deleted pod disappears once its containers have stopped and
// the Job controller has dropped its tracking finalizer, often before a poll sees its last
// status. The Job's pod template therefore carries a finalizer of the test's own
// (holdFinalizer): the API server keeps the pod, with its deletion timestamp and the statuses the
// kubelet wrote last (every container terminated, phase Failed), until the test removes it by a
// PATCH (signalRun.release; also at cleanup, before the namespace's deletion, which it would block).
// The finalizer holds only the API object: the kubelet still stops the containers at once, and
// its container garbage collection may remove a deleted pod's containers and log files at any of
// its passes, held or not. So the logs are read at every poll while the pod terminates (the
// longest read wins), and once more right after the poll that sees every container terminated.

// holdFinalizer keeps a deleted pod's object, and its final statuses, until the test releases it.
const holdFinalizer = "nodejobs.sidesync.io/hold"

// signalSidecar is the sidecar container the mesh stand-in adds for OSM: Envoy, emulated.
const signalSidecar = "envoy"

// TestSignalPodDeletion deletes the pod of a running injected Job (terminationGracePeriodSeconds
// 30, backoffLimit 0) while its app runs, and checks what each side did: sidesync forwarded the
// kubelet's SIGTERM, the app caught it ("app: SIGTERM") and exited 143, well within the grace
// period, and sidesync exited with that code after a quit that ended as FAULTS.md's "pod
// deletion" row says: the kubelet stops the sidecar at the same moment, so sidesync finds it gone
// (one INFO line, no retry), or its quit is first and the sidecar quits by it, or the sidecar's
// exit closes the connection under a quit in flight. Each way no quit failed and the sidecar
// exited 0. The Job then fails, as the Job controller counts a
// deleted pod as failed (see checkJobFailedByDeletion).
func TestSignalPodDeletion(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	injector(t, n)
	const job, grace = "invoice-export", 30
	run := startSignalJob(t, n, "signal-delete", job, grace, map[string]string{"APP_SLEEP": "1h"})

	p, logs := run.deleteAndWait(t, 2*time.Minute+grace*time.Second)
	wrapper := p.status("job")
	checkExit(t, p, "job", 143)
	end := parseTime(t, wrapper.State.Terminated.FinishedAt)
	if end.After(run.deleted.Add(grace * time.Second)) {
		t.Errorf("the wrapper ended at %s, %s after the DELETE: not within the grace period of %ds",
			end.Format(time.RFC3339), end.Sub(run.deleted).Round(time.Second), grace)
	}
	t.Logf("DELETE with a grace period of %ds: the wrapper exited %d (%s) %s after it (finishedAt, whole seconds); every container terminated %s after it, as the test saw",
		grace, wrapper.State.Terminated.ExitCode, wrapper.State.Terminated.Reason,
		end.Sub(run.deleted.Truncate(time.Second)), run.ended.Sub(run.deleted).Round(100*time.Millisecond))

	log := logs["job"]
	mustContain(t, "job", log, `INFO forwarding signal signal=SIGTERM`)
	mustContain(t, "job", log, `(?m) (stdout|stderr) F app: SIGTERM$`)
	mustContain(t, "job", log, `INFO command ended status="exited 143" .*exit=143`)
	mustContain(t, "job", log, `INFO done exit=143 .*quit=ok`)
	for _, bad := range []string{"sidecar quit failed", "quit attempt failed", " WARN ", " ERROR "} {
		if strings.Contains(log, bad) {
			t.Errorf("job: the log has %q:\n%s", bad, log)
		}
	}
	// The three outcomes of the race between sidesync's quit and the kubelet's SIGTERM to the
	// sidecar (FAULTS.md, "pod deletion"; cmd/sidesync/quit.go quitter.one): nothing listens any
	// more; the quit came first and was answered (the sidecar then quits by it); or the SIGTERM
	// came while the quit was in flight and the sidecar's exit closed the connection under it
	// (the emulator then never takes the quit: internal/testing/emulator TestQuitWhileStopping).
	gone := regexp.MustCompile(`INFO sidecar already gone: nothing listens, as the pod is being stopped sidecar=osm url=http://127\.0\.0\.1:15000/quitquitquit`).MatchString(log)
	answered := regexp.MustCompile(`INFO sidecar quit sidecar=osm url=http://127\.0\.0\.1:15000/quitquitquit`).MatchString(log)
	cut := regexp.MustCompile(`INFO sidecar quit: it closed the connection after the request sidecar=osm url=http://127\.0\.0\.1:15000/quitquitquit`).MatchString(log)
	scLog := logs[signalSidecar]
	checkExit(t, p, signalSidecar, 0)
	switch {
	case gone && !answered && !cut:
		t.Logf("sidesync's quit found the sidecar already gone (the kubelet's SIGTERM stopped it first)")
	case answered && !gone && !cut:
		mustContain(t, signalSidecar, scLog, logEnvoyQuit)
		t.Logf("sidesync's quit reached the sidecar before the kubelet's SIGTERM stopped it")
	case cut && !gone && !answered:
		t.Logf("the kubelet's SIGTERM stopped the sidecar while sidesync's quit was in flight")
	default:
		t.Errorf("job: want exactly one of sidesync's quit outcomes after a stop signal (sidecar quit, quit cut by the sidecar's exit, sidecar already gone), in:\n%s", log)
	}
	t.Logf("sidesync's log after the DELETE:\n%s", linesFrom(log, "INFO forwarding signal"))
	checkJobFailedByDeletion(t, n, run, p)
	run.release(t)
}

// TestSignalIgnoredUntilKilled deletes the pod of a running injected Job whose app ignores
// SIGTERM (APP_IGNORE_TERM=1), with terminationGracePeriodSeconds 5: sidesync forwards the
// SIGTERM, the app ignores it, and the kubelet SIGKILLs the container at the grace period, which
// ends sidesync and the app with it (PID 1 of the container's PID namespace): exit 137 (128+9,
// the README's exit-code table), no summary and no quit from sidesync. Nothing hangs: the sidecar
// stopped at once on its own SIGTERM (exit 0) and every container terminated within a bound.
func TestSignalIgnoredUntilKilled(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	injector(t, n)
	const job, grace = "invoice-export", 5
	run := startSignalJob(t, n, "signal-ignored", job, grace, map[string]string{"APP_SLEEP": "1h", "APP_IGNORE_TERM": "1"})

	// The bound: the grace period, then the kill, under CI's load.
	const bound = grace*time.Second + 2*time.Minute
	p, logs := run.deleteAndWait(t, bound)
	wrapper := p.status("job")
	checkExit(t, p, "job", 137)
	end := parseTime(t, wrapper.State.Terminated.FinishedAt)
	// finishedAt has whole seconds: the DELETE's second is the earliest it can say.
	if held := end.Sub(run.deleted.Truncate(time.Second)); held < (grace-1)*time.Second {
		t.Errorf("the wrapper ended %s after the DELETE: before the grace period of %ds, although its app ignores SIGTERM", held, grace)
	}
	t.Logf("DELETE with a grace period of %ds, app ignoring SIGTERM: the wrapper exited %d (%s, signal %d) %s after it (finishedAt, whole seconds); every container terminated %s after it, as the test saw",
		grace, wrapper.State.Terminated.ExitCode, wrapper.State.Terminated.Reason, wrapper.State.Terminated.Signal,
		end.Sub(run.deleted.Truncate(time.Second)), run.ended.Sub(run.deleted).Round(100*time.Millisecond))

	log := logs["job"]
	mustContain(t, "job", log, `INFO forwarding signal signal=SIGTERM`)
	mustContain(t, "job", log, `(?m) (stdout|stderr) F app: SIGTERM ignored$`)
	// SIGKILL leaves sidesync no time for anything more.
	for _, bad := range []string{"INFO command ended", "INFO done", "telling the sidecar to quit"} {
		if strings.Contains(log, bad) {
			t.Errorf("job: the log has %q after a SIGKILL:\n%s", bad, log)
		}
	}
	t.Logf("the wrapper's log after the DELETE:\n%s", linesFrom(log, "INFO forwarding signal"))
	sc := p.status(signalSidecar)
	checkExit(t, p, signalSidecar, 0)
	if scEnd := parseTime(t, sc.State.Terminated.FinishedAt); !scEnd.Before(end) {
		t.Errorf("the sidecar ended at %s, not before the wrapper (%s): it should stop at once on SIGTERM", scEnd, end)
	}
	if strings.Contains(logs[signalSidecar], "quit t=") {
		t.Errorf("%s: told to quit, though nothing could tell it:\n%s", signalSidecar, logs[signalSidecar])
	}
	checkJobFailedByDeletion(t, n, run, p)
	run.release(t)
}

// signalRun is a Job of these tests and its one pod.
type signalRun struct {
	n       *kubetest.Node
	ns, job string
	pod     string
	deleted time.Time // just before the DELETE
	ended   time.Time // when a poll first saw every container terminated
}

// startSignalJob creates, in a new namespace named after base, the Job that `kubectl sidesync inject` makes of
// a plain Job like deploy/examples/plain/osm.yaml: backoffLimit 0, no podFailurePolicy, the
// given grace period and app environment, and holdFinalizer on its pod. It returns once the app
// runs with its SIGTERM handler in place.
func startSignalJob(t *testing.T, n *kubetest.Node, base, job string, grace int, env map[string]string) *signalRun {
	t.Helper()
	ns := namespace(t, n, base)
	var envYAML strings.Builder
	for _, k := range sortedKeys(env) {
		fmt.Fprintf(&envYAML, "        - {name: %s, value: %q}\n", k, env[k])
	}
	plain := fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: %s
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations:
        openservicemesh.io/sidecar-injection: enabled
      finalizers: [%s]
    spec:
      restartPolicy: Never
      terminationGracePeriodSeconds: %d
      securityContext:
        runAsNonRoot: true
        runAsUser: 10001
        seccompProfile: {type: RuntimeDefault}
      containers:
      - name: job
        image: registry.example.com/billing/invoice-export:2.3.0
        command: [dotnet, InvoiceExport.dll]
        env:
%s        securityContext:
          allowPrivilegeEscalation: false
          capabilities: {drop: [ALL]}
`, job, holdFinalizer, grace, envYAML.String())
	file := filepath.Join(t.TempDir(), "job.yaml")
	if err := os.WriteFile(file, []byte(plain), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(bins, "kubectl-sidesync"), "inject", "-f", file, "--image", sidesyncImage).Output()
	if err != nil {
		t.Fatalf("kubectl sidesync inject: %v", err)
	}
	if !strings.Contains(string(out), holdFinalizer) {
		t.Fatalf("kubectl sidesync inject dropped the pod template's finalizer:\n%s", out)
	}
	createOne(t, n, ns, "Job", out)
	r := &signalRun{n: n, ns: ns, job: job, pod: waitJobPod(t, n, ns, job)}
	t.Cleanup(func() { r.release(t) }) // before the namespace's deletion, which the finalizer would block

	// The app prints "app: check URL STATUS" (APP_CHECK_URL, from its image) after it installed
	// its SIGTERM handler: a SIGTERM before would kill it with Go's default action, silently.
	deadline := time.Now().Add(jobTimeout)
	for {
		log := containerLog(t, n, ns, r.pod, "job")
		if strings.Contains(log, "INFO command started") && strings.Contains(log, "app: check ") {
			mustContain(t, "job", log, `app: check http://127\.0\.0\.1:15000/ready 200`)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s: the app is not running after %s: %s\nlog of job:\n%s", r.pod, jobTimeout,
				describe(getPod(t, n, ns, r.pod)), log)
		}
		time.Sleep(200 * time.Millisecond) // polling the kubelet's log file, bounded by the deadline
	}
	return r
}

// deleteAndWait deletes the pod with its own grace period (a DELETE without a body, as kubectl
// delete pod sends) and waits, up to timeout, until every container has terminated and the pod's
// phase is final. It returns the pod's last state and each container's log.
func (r *signalRun) deleteAndWait(t *testing.T, timeout time.Duration) (pod, map[string]string) {
	t.Helper()
	path := "/api/v1/namespaces/" + r.ns + "/pods/" + r.pod
	r.deleted = time.Now()
	if resp := r.n.Send(t, http.MethodDelete, path, nil); resp.Code != http.StatusOK {
		t.Fatalf("DELETE pod %s: %d: %s", r.pod, resp.Code, resp.Body)
	}
	logs := map[string]string{}
	// The kubelet may remove the files between a listing and a read: an error keeps the last read.
	readLogs := func() {
		for _, c := range []string{"job", signalSidecar} {
			if l, err := r.n.PodLogs(r.ns, r.pod, c); err == nil && len(strings.Join(l, "")) >= len(logs[c]) {
				logs[c] = strings.Join(l, "")
			}
		}
	}
	deadline := r.deleted.Add(timeout)
	for {
		var raw []byte
		if code := r.n.Do(t, http.MethodGet, path, nil, &raw); code != http.StatusOK {
			t.Fatalf("GET pod %s during its deletion: %d: %s (the finalizer %s should hold it)", r.pod, code, raw, holdFinalizer)
		}
		readLogs()
		var p pod
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		done := (p.Status.Phase == "Failed" || p.Status.Phase == "Succeeded") && len(p.Status.ContainerStatuses) == 2
		for _, st := range p.Status.ContainerStatuses {
			done = done && st.State.Terminated != nil
		}
		if done {
			r.ended = time.Now()
			readLogs()
			if p.Metadata.DeletionTimestamp == "" {
				t.Errorf("pod %s: no deletionTimestamp after the DELETE", r.pod)
			}
			// A DELETE through the API is no disruption in the Job controller's sense: only
			// preemption, eviction, the taint manager, PodGC and the kubelet's own terminations
			// add the DisruptionTarget condition. So a podFailurePolicy rule on it would not
			// spare this failure.
			for _, c := range p.Status.Conditions {
				if c.Type == "DisruptionTarget" {
					t.Errorf("pod %s: condition DisruptionTarget=%s (%s) after a plain DELETE", r.pod, c.Status, c.Reason)
				}
			}
			if t.Failed() || testing.Verbose() {
				t.Logf("pod %s after the DELETE: phase %s, conditions %+v", r.pod, p.Status.Phase, p.Status.Conditions)
			}
			return p, logs
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s: not every container terminated %s after the DELETE: %s\nlog of job:\n%s\nlog of %s:\n%s",
				r.pod, timeout, describe(p), logs["job"], signalSidecar, logs[signalSidecar])
		}
		time.Sleep(200 * time.Millisecond) // polling the API for the pod's state, bounded by the deadline
	}
}

// checkJobFailedByDeletion checks what the Job controller made of the deleted pod. Without a
// podFailurePolicy and with the default podReplacementPolicy (TerminatingOrFailed), it counts a
// pod that has a deletion timestamp as failed at once (pkg/controller/job isPodFailed): with
// backoffLimit 0 that exceeds the limit, so it adds FailureTarget (BackoffLimitExceeded) and
// creates no replacement; it adds the final Failed condition only once the pod no longer
// terminates (its phase is Failed), so Failed comes after the wrapper ended.
func checkJobFailedByDeletion(t *testing.T, n *kubetest.Node, r *signalRun, p pod) {
	t.Helper()
	if cond := n.WaitJob(t, r.ns, r.job, jobTimeout); cond != "Failed" {
		t.Fatalf("Job %s after its pod's deletion: %q after %s, want Failed", r.job, cond, jobTimeout)
	}
	job := getJob(t, n, r.ns, r.job)
	conds := map[string]string{}
	var failedAt time.Time
	for _, c := range job.Status.Conditions {
		if c.Status == "True" {
			conds[c.Type] = c.Reason
		}
		if c.Type == "Failed" {
			failedAt = parseTime(t, c.LastTransitionTime)
		}
	}
	for _, typ := range []string{"FailureTarget", "Failed"} {
		if conds[typ] != "BackoffLimitExceeded" {
			t.Errorf("Job %s: condition %s with reason %q, want BackoffLimitExceeded (conditions %+v)", r.job, typ, conds[typ], job.Status.Conditions)
		}
	}
	if job.Status.Failed != 1 || job.Status.Succeeded != 0 || job.Status.Active != 0 {
		t.Errorf("Job %s: failed=%d succeeded=%d active=%d, want 1, 0, 0", r.job, job.Status.Failed, job.Status.Succeeded, job.Status.Active)
	}
	if pods := jobPods(t, n, r.ns, r.job); len(pods) != 1 {
		t.Errorf("Job %s: %d pods, want the deleted one alone (no replacement with backoffLimit 0)", r.job, len(pods))
	}
	wrapperEnd := parseTime(t, p.status("job").State.Terminated.FinishedAt)
	if failedAt.Before(wrapperEnd) {
		t.Errorf("Job %s: Failed at %s, before its pod's wrapper ended (%s): the controller should wait for the terminating pod",
			r.job, failedAt.Format(time.RFC3339), wrapperEnd.Format(time.RFC3339))
	}
	t.Logf("Job %s: FailureTarget and Failed (BackoffLimitExceeded), failed=%d, no replacement pod; Failed %s after the DELETE",
		r.job, job.Status.Failed, failedAt.Sub(r.deleted.Truncate(time.Second)))
}

// release removes holdFinalizer from the pod, so that it goes (and its namespace can): a merge
// patch of the finalizers without it, at the resourceVersion read, retried on a conflict (the
// Job controller edits its own finalizer on the pod too).
func (r *signalRun) release(t *testing.T) {
	t.Helper()
	if r.pod == "" {
		return
	}
	path := "/api/v1/namespaces/" + r.ns + "/pods/" + r.pod
	deadline := time.Now().Add(time.Minute)
	for {
		var raw []byte
		switch code := r.n.Do(t, http.MethodGet, path, nil, &raw); code {
		case http.StatusNotFound:
			return
		case http.StatusOK:
		default:
			t.Errorf("GET pod %s to remove the finalizer %s: %d: %s", r.pod, holdFinalizer, code, raw)
			return
		}
		var m pod
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if !contains(m.Metadata.Finalizers, holdFinalizer) {
			return
		}
		keep := []string{}
		for _, f := range m.Metadata.Finalizers {
			if f != holdFinalizer {
				keep = append(keep, f)
			}
		}
		patch := map[string]any{"metadata": map[string]any{"finalizers": keep, "resourceVersion": m.Metadata.ResourceVersion}}
		resp := r.n.Send(t, http.MethodPatch, path, patch)
		switch {
		case resp.Code == http.StatusOK || resp.Code == http.StatusNotFound:
			return
		case resp.Code != http.StatusConflict || time.Now().After(deadline):
			t.Errorf("removing the finalizer %s from pod %s: %d: %s", holdFinalizer, r.pod, resp.Code, resp.Body)
			return
		}
	}
}

// linesFrom returns a log's lines from the first that contains s.
func linesFrom(log, s string) string {
	if i := strings.Index(log, s); i >= 0 {
		if j := strings.LastIndexByte(log[:i], '\n'); j >= 0 {
			return log[j+1:]
		}
		return log
	}
	return ""
}
