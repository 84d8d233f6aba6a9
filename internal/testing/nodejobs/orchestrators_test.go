//go:build linux

package nodejobs

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/testing/kubetest"
	"github.com/sidesync/sidesync/internal/testing/realsidecar"
)

// The pods of the orchestrators' examples (deploy/examples/argo.yaml, tekton.yaml, airflow.yaml)
// are bare Pods, as Argo Workflows, Tekton and Airflow create them; the tests here run them on the
// node and do what the orchestrator would do around them (set Tekton's ready annotation, stop
// its own helper container), nothing more. cloudsql-native.yaml is the case without sidesync.

// podTimeout bounds a pod's run from creation to the state a test waits for, as jobTimeout does
// a Job's.
const podTimeout = jobTimeout

// plainWatch is how long a plain pod is watched, after its apps ended, for a completion that must
// not come (as runPlain watches a plain Job).
const plainWatch = 10 * time.Second

// tektonNopImage stands in for Tekton's nop image, which its controller puts in place of a Task
// sidecar's image to stop it (tektoncd/pipeline pkg/pod/status.go, StopSidecars): it exits 0.
const tektonNopImage = "ghcr.io/tektoncd/pipeline/nop:v1.3.0"

// nopImage is the nop image, the app stand-in in dir with no environment: it starts and exits 0.
func nopImage(dir string) kubetest.Image {
	return kubetest.Image{Ref: tektonNopImage,
		Files: map[string]string{"/ko-app/nop": filepath.Join(dir, "app")}, Entrypoint: []string{"/ko-app/nop"}}
}

// awaitPod waits until cond holds for the pod, as waitPod does, but logs every container's log
// before it fails the test.
func awaitPod(t *testing.T, n *kubetest.Node, ns, name, what string, cond func(pod) bool) pod {
	t.Helper()
	p, ok := pollPod(t, n, ns, name, podTimeout, cond)
	if !ok {
		dumpPod(t, n, ns, name)
		t.Fatalf("pod %s/%s: not %s after %s", ns, name, what, podTimeout)
	}
	return p
}

// startedAt is when the container's current run started, or "".
func startedAt(p pod, container string) string {
	switch st := p.status(container); {
	case st == nil:
	case st.State.Running != nil:
		return st.State.Running.StartedAt
	case st.State.Terminated != nil:
		return st.State.Terminated.StartedAt
	}
	return ""
}

// finished reports whether the pod has reached a final phase.
func finished(p pod) bool { return p.Status.Phase == "Succeeded" || p.Status.Phase == "Failed" }

// ended reports whether every named container of the pod has terminated.
func ended(p pod, names ...string) bool {
	for _, name := range names {
		st := p.status(name)
		if st == nil || st.State.Terminated == nil {
			return false
		}
	}
	return true
}

// running reports whether every named container of the pod runs.
func running(p pod, names ...string) bool {
	for _, name := range names {
		st := p.status(name)
		if st == nil || st.State.Running == nil {
			return false
		}
	}
	return true
}

// dumpPod logs a pod's state and every container's log, for a failure.
func dumpPod(t *testing.T, n *kubetest.Node, ns, name string) {
	t.Helper()
	var p pod
	n.Do(t, http.MethodGet, "/api/v1/namespaces/"+ns+"/pods/"+name, nil, &p)
	logPods(t, n, ns, []pod{p})
}

// succeeded waits for the pod's final phase and fails the test, with every log, unless it is
// Succeeded.
func succeeded(t *testing.T, n *kubetest.Node, ns, name string, begin time.Time) pod {
	t.Helper()
	p := awaitPod(t, n, ns, name, "Succeeded or Failed", finished)
	if p.Status.Phase != "Succeeded" {
		dumpPod(t, n, ns, name)
		t.Fatalf("pod %s: %s, want Succeeded", name, p.Status.Phase)
	}
	t.Logf("pod %s Succeeded %s after its creation", name, time.Since(begin).Round(100*time.Millisecond))
	return p
}

// finishedAt is when the container's current run ended (the API's second resolution).
func finishedAt(t *testing.T, p pod, container string) time.Time {
	t.Helper()
	st := p.status(container)
	if st == nil || st.State.Terminated == nil {
		t.Fatalf("pod %s: container %s has not terminated", p.Metadata.Name, container)
	}
	return parseTime(t, st.State.Terminated.FinishedAt)
}

// criLine is one line of a kubelet log file: "TIME STREAM TAG TEXT".
type criLine struct {
	at   time.Time
	text string
}

// criLines parses a container's log files, as containerLog returns them.
func criLines(t *testing.T, log string) []criLine {
	t.Helper()
	var out []criLine
	for l := range strings.SplitSeq(strings.TrimRight(log, "\n"), "\n") {
		f := strings.SplitN(l, " ", 4)
		if len(f) < 4 {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, f[0])
		if err != nil {
			t.Fatalf("a log line without a time: %q", l)
		}
		out = append(out, criLine{at, f[3]})
	}
	return out
}

// lastLine is the time of a log's last line.
func lastLine(t *testing.T, what, log string) time.Time {
	t.Helper()
	lines := criLines(t, log)
	if len(lines) == 0 {
		t.Fatalf("%s: an empty log", what)
	}
	return lines[len(lines)-1].at
}

// emulatorQuit returns the time of the emulated sidecar's one quit event, and fails the test
// unless it accepted exactly requests quit requests (the emulator logs every request it
// answers): one per wrapper that logged its quit, and none from anybody else.
func emulatorQuit(t *testing.T, container, log string, requests int) time.Time {
	t.Helper()
	quits := regexp.MustCompile(`(?m) F quit t=(\d+)$`).FindAllStringSubmatch(log, -1)
	if len(quits) != 1 {
		t.Fatalf("%s: %d quit events, want 1:\n%s", container, len(quits), log)
	}
	if n := countLines(log, ` F request method=POST path=\S*(quitquitquit|shutdown|agent/v1/quit)\S* status=2`); n != requests {
		t.Errorf("%s: %d quit requests answered 2xx, want exactly %d (one per wrapper that told it to quit):\n%s", container, n, requests, log)
	}
	ns, _ := strconv.ParseInt(quits[0][1], 10, 64)
	return time.Unix(0, ns)
}

// hangs watches a pod without sidesync whose other containers have ended, for plainWatch, and
// fails the test if it reaches a final phase, or if at the end it is not Running with the mesh's
// sidecar running: what holds the pod. A completion cannot be proved never to come: the pod is
// watched for a bounded while.
func hangs(t *testing.T, n *kubetest.Node, ns, name, sidecar string) pod {
	t.Helper()
	if p, done := pollPod(t, n, ns, name, plainWatch, finished); done {
		dumpPod(t, n, ns, name)
		t.Fatalf("pod %s without sidesync: %s, want it to hang: %s", name, p.Status.Phase, describe(p))
	}
	p := getPod(t, n, ns, name)
	if !running(p, sidecar) || p.Status.Phase != "Running" {
		dumpPod(t, n, ns, name)
		t.Fatalf("pod %s without sidesync: want Running with %s running: %s", name, sidecar, describe(p))
	}
	return p
}

// --- Argo --------------------------------------------------------------------------------------

// TestArgo runs Argo's step pod (deploy/examples/argo.yaml: Argo's wait and the step's main,
// both wrapped, as peers; Istio's proxy added by the mesh stand-in), as written (init-copy) and
// as inject writes it for an image volume. The stand-in's main writes its exit code as
// argoexec emissary does; its wait waits for it, then uploads through the mesh for about 2 s,
// as argoexec wait does. Each pod Succeeds; main's wrapper, which ends first, leaves the proxy
// alone (wait's uploads, after main ended, all got 2xx); wait's wrapper, the last to end, tells
// it to quit, once. The plain pod, without sidesync, never completes.
func TestArgo(t *testing.T) {
	t.Parallel()
	n := testNode(t)
	injector(t, n)
	for _, delivery := range []string{"init-copy", "image-volume"} {
		t.Run(delivery, func(t *testing.T) {
			t.Parallel()
			runArgo(t, n, "argo-"+delivery, exampleStream(t, "argo", delivery))
		})
	}
	t.Run("without-sidesync", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, n, "argo-plain")
		name := createOne(t, n, ns, "Pod", exampleStream(t, "argo", "plain"))
		awaitPod(t, n, ns, name, "with wait and main terminated", func(p pod) bool { return ended(p, "wait", "main") })
		hangs(t, n, ns, name, sidecarContainer("argo"))
		log := containerLog(t, n, ns, name, "wait")
		mustContain(t, "wait", log, `app: upload 4 at `) // wait did its work after main: only the proxy holds the pod
		t.Logf("pod %s without sidesync: wait and main ended, %s runs and the pod is Running %s later",
			name, sidecarContainer("argo"), plainWatch)
	})
}

// runArgo creates Argo's pod in a namespace named after base and checks its run.
func runArgo(t *testing.T, n *kubetest.Node, base string, stream []byte) {
	ns := namespace(t, n, base)
	begin := time.Now()
	name := createOne(t, n, ns, "Pod", stream)
	p := succeeded(t, n, ns, name, begin)
	if got := p.Metadata.Annotations[contract.WrappedAnnotation]; got != "wait,main" {
		t.Fatalf("annotation %s = %q, want wait,main", contract.WrappedAnnotation, got)
	}
	proxy := sidecarContainer("argo")
	check := regexp.QuoteMeta(readyURL("istio"))
	logs := map[string]string{}
	for _, c := range []string{"wait", "main"} {
		logs[c] = terminated(t, n, ns, p, c, 0)
		mustContain(t, c, logs[c], `app: check `+check+` 2\d\d`)
		mustContain(t, c, logs[c], `INFO detected sidecar sidecar=istio from="pod annotations in `)
		mustContain(t, c, logs[c], `INFO one of several wrapped containers: the last to end tells the sidecars to quit peers=wait,main .*container=`+c)
	}
	// wait used the network after main had ended: every upload got an answer from the proxy.
	mustContain(t, "wait", logs["wait"], `app: \S+ main ended with exit code 0`)
	if got := countLines(logs["wait"], `app: check `+check+` 2\d\d$`); got != 1+5 {
		t.Errorf("wait: %d checks got 2xx, want 6 (at start, and each of its 5 uploads after main ended):\n%s", got, logs["wait"])
	}

	// The proxy was told to quit once, by the last wrapper to end.
	var quitters, others []string
	for _, c := range []string{"wait", "main"} {
		switch k := countLines(logs[c], `INFO sidecar quit sidecar=istio `); k {
		case 0:
			others = append(others, c)
		case 1:
			quitters = append(quitters, c)
		default:
			t.Errorf("%s: %d \"sidecar quit\" lines, want at most 1:\n%s", c, k, logs[c])
		}
	}
	if len(quitters) != 1 {
		t.Fatalf("wrappers that told the proxy to quit: %v, want exactly one", quitters)
	}
	last, first := quitters[0], others[0]
	if last != "wait" {
		t.Errorf("%s told the proxy to quit, want wait: it ends after main's exit code and its uploads", last)
	}
	mustContain(t, first, logs[first], logPeersHeld+`, and the last to end tells the sidecars to quit running=`+last)
	if count := countLines(logs[first]+logs[last], `INFO telling the sidecar to quit `); count != 1 {
		t.Errorf("%d \"telling the sidecar to quit\" lines in the wrappers' logs, want 1", count)
	}
	if fl, ff := finishedAt(t, p, last), finishedAt(t, p, first); fl.Before(ff) {
		t.Errorf("%s, which told the proxy to quit, finished at %s, before %s at %s", last, fl, first, ff)
	}
	proxyLog := terminated(t, n, ns, p, proxy, 0)
	quitAt := emulatorQuit(t, proxy, proxyLog, 1)
	firstEnd := lastLine(t, first, logs[first])
	if !quitAt.After(firstEnd) {
		t.Errorf("the proxy quit at %s, not after %s's last line at %s", quitAt.Format(time.RFC3339Nano), first, firstEnd.Format(time.RFC3339Nano))
	}
	t.Logf("%s ended (last line %s); %s told %s to quit %s later, the quit accepted once",
		first, firstEnd.Format(time.RFC3339Nano), last, proxy, quitAt.Sub(firstEnd).Round(time.Millisecond))
}

// --- Tekton ------------------------------------------------------------------------------------

// TestTekton runs a TaskRun's pod (deploy/examples/tekton.yaml: steps step-build and step-push
// wrapped, Tekton's sidecar-registry not, Linkerd's proxy added by the mesh stand-in), as
// written (init-copy) and as inject writes it for an image volume, and does what Tekton's
// controller does around it: it sets the tekton.dev/ready annotation once the sidecars run (the
// first step waits for it through the downward API), and once the steps have ended it replaces
// sidecar-registry's image with the nop image, which stops it. sidesync tells linkerd-proxy to
// quit, by the last step to end, and never touches sidecar-registry: it still runs its first
// run, unrestarted, after the steps and the proxy have ended. The plain pod, without sidesync,
// never completes: Tekton stops its own sidecar, nothing stops the mesh's.
func TestTekton(t *testing.T) {
	n := testNode(t)
	injector(t, n)
	t.Parallel()
	for _, delivery := range []string{"init-copy", "image-volume"} {
		t.Run(delivery, func(t *testing.T) {
			t.Parallel()
			runTekton(t, n, "tekton-"+delivery, exampleStream(t, "tekton", delivery))
		})
	}
	t.Run("without-sidesync", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, n, "tekton-plain")
		name := createOne(t, n, ns, "Pod", exampleStream(t, "tekton", "plain"))
		proxy, own := sidecarContainer("tekton"), "sidecar-registry"
		steps := []string{"step-build", "step-push"}

		tektonReady(t, n, ns, name, proxy, own)
		p := awaitPod(t, n, ns, name, "with its steps terminated", func(p pod) bool { return ended(p, steps...) || finished(p) })
		if finished(p) {
			dumpPod(t, n, ns, name)
			t.Fatalf("pod %s without sidesync: %s before Tekton stopped %s", name, p.Status.Phase, own)
		}
		for _, c := range steps {
			checkExit(t, p, c, 0)
		}
		tektonStop(t, n, ns, name, own)
		// The kubelet stops the registry's run and starts the nop in its place, which exits 0.
		p = awaitPod(t, n, ns, name, own+"'s nop run terminated", func(p pod) bool {
			st := p.status(own)
			return st != nil && st.RestartCount >= 1 && st.State.Terminated != nil
		})
		checkExit(t, p, own, 0)
		mustContain(t, own, containerLog(t, n, ns, name, own), `app: \S+ started as \["/ko-app/nop"\]`)

		hangs(t, n, ns, name, proxy)
		t.Logf("pod %s without sidesync: the steps ended, Tekton stopped %s, %s runs and the pod is Running %s later",
			name, own, proxy, plainWatch)
	})
}

// tektonReady does what Tekton's controller does once the pod's sidecars run: it sets the
// tekton.dev/ready annotation, which the first step waits for through the downward API. It
// returns when it did.
func tektonReady(t *testing.T, n *kubetest.Node, ns, name, proxy, own string) time.Time {
	t.Helper()
	awaitPod(t, n, ns, name, "with its sidecars running", func(p pod) bool { return running(p, proxy, own) })
	if code := n.Do(t, http.MethodPatch, "/api/v1/namespaces/"+ns+"/pods/"+name,
		map[string]any{"metadata": map[string]any{"annotations": map[string]string{"tekton.dev/ready": "READY"}}}, nil); code != http.StatusOK {
		t.Fatalf("PATCH the ready annotation: %d", code)
	}
	return time.Now()
}

// tektonStop does what Tekton's controller does to stop a Task's sidecar once the steps have
// ended: an update of the pod with the nop image in the sidecar's place.
func tektonStop(t *testing.T, n *kubetest.Node, ns, name, own string) {
	t.Helper()
	var obj map[string]any
	n.Do(t, http.MethodGet, "/api/v1/namespaces/"+ns+"/pods/"+name, nil, &obj)
	for _, c := range obj["spec"].(map[string]any)["containers"].([]any) {
		if c := c.(map[string]any); c["name"] == own {
			c["image"] = tektonNopImage
		}
	}
	if r := n.Send(t, http.MethodPut, "/api/v1/namespaces/"+ns+"/pods/"+name, obj); r.Code != http.StatusOK {
		t.Fatalf("PUT the pod with %s's image replaced: %d: %s", own, r.Code, r.Body)
	}
}

// runTekton creates the TaskRun's pod in a namespace named after base, does Tekton's part and
// checks its run.
func runTekton(t *testing.T, n *kubetest.Node, base string, stream []byte) {
	ns := namespace(t, n, base)
	begin := time.Now()
	name := createOne(t, n, ns, "Pod", stream)
	proxy, own := sidecarContainer("tekton"), "sidecar-registry"
	steps := []string{"step-build", "step-push"}

	// Tekton marks the pod ready once its sidecars run; its first step starts then.
	ready := tektonReady(t, n, ns, name, proxy, own)

	// The steps end, and the last tells linkerd-proxy to quit; Tekton's own sidecar runs on.
	p := awaitPod(t, n, ns, name, "with its steps and "+proxy+" terminated", func(p pod) bool {
		return ended(p, append(steps, proxy)...) || finished(p)
	})
	if finished(p) {
		dumpPod(t, n, ns, name)
		t.Fatalf("pod %s: %s before Tekton stopped %s", name, p.Status.Phase, own)
	}
	t.Logf("steps and %s ended %s after the ready annotation", proxy, time.Since(ready).Round(100*time.Millisecond))
	if st := p.status(own); st == nil || st.State.Running == nil || st.RestartCount != 0 {
		dumpPod(t, n, ns, name)
		t.Fatalf("%s after the steps ended: want its first run still running (sidesync leaves it to Tekton): %s", own, describe(p))
	}

	// Tekton stops its sidecar.
	tektonStop(t, n, ns, name, own)
	p = succeeded(t, n, ns, name, begin)

	logs := map[string]string{}
	var quitters []string
	answered := 0 // quits the proxy answered 2xx; one that met it already stopping saw it go
	for _, c := range steps {
		logs[c] = terminated(t, n, ns, p, c, 0)
		mustContain(t, c, logs[c], `INFO detected sidecar sidecar=linkerd from="pod annotations in `)
		mustContain(t, c, logs[c], `INFO one of several wrapped containers`)
		// A step that told the proxy to quit is a quitter, whatever the proxy answered: it may
		// have met it already stopping (the connection closed) or gone (refused), another step's
		// quit having taken it; only those two ways to fail are allowed.
		if countLines(logs[c], `INFO telling the sidecar to quit sidecar=linkerd `) > 0 {
			quitters = append(quitters, c)
		}
		for _, l := range regexp.MustCompile(`(?m)WARN sidecar quit failed .*$`).FindAllString(logs[c], -1) {
			if !strings.Contains(l, "connection refused") {
				t.Errorf("%s's quit failed otherwise than by finding the proxy gone: %s", c, l)
			}
		}
		answered += countLines(logs[c], `INFO sidecar quit sidecar=linkerd `)
		for _, l := range regexp.MustCompile(`(?m)INFO telling the sidecar to quit .*$`).FindAllString(logs[c], -1) {
			if !strings.Contains(l, "sidecar=linkerd ") {
				t.Errorf("%s told another sidecar than linkerd to quit: %s", c, l)
			}
		}
		if strings.Contains(logs[c], own) {
			t.Errorf("%s's log names %s: sidesync must leave it to Tekton:\n%s", c, own, logs[c])
		}
	}
	mustContain(t, "step-push", logs["step-push"], `app: \S+ found /tekton/run/0/out`)
	if len(quitters) == 0 {
		t.Fatalf("no step told %s to quit", proxy)
	}
	for _, q := range quitters {
		for _, o := range steps {
			// Two quitters ended their commands together; the one whose quit found the proxy
			// gone and retried may finish later.
			if !slices.Contains(quitters, o) && finishedAt(t, p, q).Before(finishedAt(t, p, o)) {
				t.Errorf("%s told %s to quit but finished before %s", q, proxy, o)
			}
		}
	}
	// A step starts when the one before it writes its post file, just before that step's
	// entrypoint exits, and these steps are short: the two wrappers may end within a
	// millisecond, each write its end before it reads the other's, and both tell the proxy to
	// quit (CI saw it three times; the second quit may meet the proxy already stopping, and then
	// sees it go, or gone, rather than answer). internal/pod/peers allows that, a quit being idempotent; what must
	// hold is that each step either quit or held back for a step still running, and that
	// nobody else told the proxy to quit.
	for _, c := range steps {
		held := strings.Contains(logs[c], logPeersHeld)
		if quit := slices.Contains(quitters, c); quit == held {
			t.Errorf("%s: told %s to quit: %v, and held back for a step still running: %v; want one or the other", c, proxy, quit, held)
		}
	}
	if t.Failed() {
		for _, c := range steps {
			t.Logf("log of %s:\n%s", c, logs[c])
		}
	}
	if answered == 0 {
		t.Errorf("no step's quit was answered by %s", proxy)
	}
	emulatorQuit(t, proxy, terminated(t, n, ns, p, proxy, 0), answered)

	// sidecar-registry: its first run was stopped by the kubelet after the image change, the
	// nop then exited 0.
	st := p.status(own)
	ownLog := terminated(t, n, ns, p, own, 0)
	if st.RestartCount != 1 || st.LastState.Terminated == nil {
		t.Errorf("%s: restartCount %d, last state %+v, want one earlier run (the registry) replaced by the nop", own, st.RestartCount, st.LastState)
	} else {
		t.Logf("%s: the registry run ended with exit %d (%s) when Tekton replaced its image; the nop exited %d",
			own, st.LastState.Terminated.ExitCode, st.LastState.Terminated.Reason, st.State.Terminated.ExitCode)
	}
	if lt := st.LastState.Terminated; lt == nil || lt.ExitCode != 143 {
		t.Errorf("%s: the registry's run ended %+v, want exit 143: the stand-in's answer to the kubelet's SIGTERM", own, st.LastState)
	}
	// The kubelet keeps the log of the current run only, here: the nop's.
	mustContain(t, own, ownLog, `app: \S+ started as \["/ko-app/nop"\]`)
	t.Logf("steps told %s to quit: %v", proxy, quitters)
}

// --- Airflow -----------------------------------------------------------------------------------

// TestAirflow runs a KubernetesPodOperator's pod (deploy/examples/airflow.yaml: base wrapped,
// airflow-xcom-sidecar not, Vault Agent added by the mesh stand-in), as written (init-copy) and
// as inject writes it for an image volume, and does what the operator does around it: once base
// has ended, it execs /bin/sh in airflow-xcom-sidecar and writes `kill -s SIGINT 1` to its stdin
// (apache/airflow providers/cncf/kubernetes pod_manager.py, extract_xcom_kill), through the
// API's exec subresource over a WebSocket. sidesync tells vault-agent to quit when base ends and
// never touches the XCom sidecar, which still runs then. The plain pod, without sidesync, never
// completes: the operator stops its own sidecar, nothing stops the mesh's.
func TestAirflow(t *testing.T) {
	n := testNode(t)
	injector(t, n)
	t.Parallel()
	for _, delivery := range []string{"init-copy", "image-volume"} {
		t.Run(delivery, func(t *testing.T) {
			t.Parallel()
			runAirflow(t, n, "airflow-"+delivery, exampleStream(t, "airflow", delivery))
		})
	}
	t.Run("without-sidesync", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, n, "airflow-plain")
		name := createAirflow(t, n, ns, exampleStream(t, "airflow", "plain"))
		agent, own := sidecarContainer("airflow"), "airflow-xcom-sidecar"

		p := awaitPod(t, n, ns, name, "with base terminated", func(p pod) bool { return ended(p, "base") || finished(p) })
		if finished(p) {
			dumpPod(t, n, ns, name)
			t.Fatalf("pod %s without sidesync: %s before the operator stopped %s", name, p.Status.Phase, own)
		}
		checkExit(t, p, "base", 0)
		if st := p.status(own); st == nil || st.State.Running == nil {
			dumpPod(t, n, ns, name)
			t.Fatalf("%s after base ended: want it running, for the operator to stop: %s", own, describe(p))
		}
		airflowStop(t, n, ns, name, own)
		p = awaitPod(t, n, ns, name, own+" terminated", func(p pod) bool { return ended(p, own) })
		mustContain(t, own, terminated(t, n, ns, p, own, 0), `app: SIGINT`)

		hangs(t, n, ns, name, agent)
		t.Logf("pod %s without sidesync: base ended, the operator stopped %s, %s runs and the pod is Running %s later",
			name, own, agent, plainWatch)
	})
}

// createAirflow creates the operator's pod of the stream in ns and returns its name. The
// operator's XCom sidecar image is "alpine", untagged: the kubelet would pull it (policy Always
// for :latest), and the node has no registry. It runs the stand-in imported under that name,
// with the policy set to IfNotPresent; nothing else of the manifest changes.
func createAirflow(t *testing.T, n *kubetest.Node, ns string, stream []byte) string {
	t.Helper()
	serviceAccounts(t, n, ns, stream)
	obj := streamObject(t, stream, "Pod")
	for _, c := range containersOf(obj) {
		if c["name"] == "airflow-xcom-sidecar" {
			c["imagePullPolicy"] = "IfNotPresent"
		}
	}
	return n.Create(t, "/api/v1/namespaces/"+ns+"/pods", obj)["metadata"].(map[string]any)["name"].(string)
}

// airflowStop does what the operator does to stop its XCom sidecar once base has ended: it
// execs /bin/sh in it and writes `kill -s SIGINT 1` to its stdin.
func airflowStop(t *testing.T, n *kubetest.Node, ns, name, own string) {
	t.Helper()
	out := execStdin(t, n, ns, name, own, []string{"/bin/sh"}, "kill -s SIGINT 1\n")
	t.Logf("exec /bin/sh in %s, stdin `kill -s SIGINT 1`: %q", own, out)
}

// runAirflow creates the operator's pod in a namespace named after base, does the operator's
// part and checks its run.
func runAirflow(t *testing.T, n *kubetest.Node, base string, stream []byte) {
	ns := namespace(t, n, base)
	begin := time.Now()
	name := createAirflow(t, n, ns, stream)
	agent, own := sidecarContainer("airflow"), "airflow-xcom-sidecar"

	awaitPod(t, n, ns, name, "with base terminated", func(p pod) bool { return ended(p, "base") || finished(p) })
	// Vault Agent has no readiness check: sidesync does not wait for it, and base may end before
	// the kubelet has even started vault-agent (it starts the containers in order, base first).
	// The quit must still reach it; a quit that gave up leaves the agent, and the pod, running.
	if log := containerLog(t, n, ns, name, "base"); strings.Contains(log, "WARN sidecar quit failed") {
		p := getPod(t, n, ns, name)
		dumpPod(t, n, ns, name)
		t.Fatalf("base ended before %s listened (sidecar=\"nothing to wait for\"), and sidesync's quit gave up "+
			"after its retries (connection refused), before the agent started: it is never told to quit and the pod never "+
			"completes. %s started at %s, base finished at %s", agent, agent, startedAt(p, agent), p.status("base").State.Terminated.FinishedAt)
	}
	p := awaitPod(t, n, ns, name, "with base and "+agent+" terminated", func(p pod) bool {
		return ended(p, "base", agent) || finished(p)
	})
	if finished(p) {
		dumpPod(t, n, ns, name)
		t.Fatalf("pod %s: %s before the operator stopped %s", name, p.Status.Phase, own)
	}
	if st := p.status(own); st == nil || st.State.Running == nil || st.RestartCount != 0 {
		dumpPod(t, n, ns, name)
		t.Fatalf("%s after base ended: want it still running (sidesync leaves it to the operator): %s", own, describe(p))
	}

	airflowStop(t, n, ns, name, own)
	p = succeeded(t, n, ns, name, begin)

	log := terminated(t, n, ns, p, "base", 0)
	mustContain(t, "base", log, `INFO detected sidecar sidecar=vault from="pod annotations in `)
	mustContain(t, "base", log, `INFO sidecar quit sidecar=vault `)
	for _, l := range regexp.MustCompile(`(?m)INFO telling the sidecar to quit .*$`).FindAllString(log, -1) {
		if !strings.Contains(l, "sidecar=vault ") {
			t.Errorf("base told another sidecar than vault to quit: %s", l)
		}
	}
	if strings.Contains(log, own) {
		t.Errorf("base's log names %s: sidesync must leave it to the operator:\n%s", own, log)
	}
	emulatorQuit(t, agent, terminated(t, n, ns, p, agent, 0), 1)
	ownLog := terminated(t, n, ns, p, own, 0)
	mustContain(t, own, ownLog, `app: SIGINT`)
	if at, bt := finishedAt(t, p, own), finishedAt(t, p, "base"); at.Before(bt) {
		t.Errorf("%s finished at %s, before base at %s", own, at, bt)
	}
}

// execStdin runs command in a container through the API's exec subresource, over a WebSocket
// (v5.channel.k8s.io, as kubectl exec speaks it), writes stdin and closes it, and returns what
// came back on stdout and stderr once the stream ends.
func execStdin(t *testing.T, n *kubetest.Node, ns, pod, container string, command []string, stdin string) string {
	t.Helper()
	q := url.Values{"container": {container}, "stdin": {"true"}, "stdout": {"true"}, "stderr": {"true"}}
	for _, c := range command {
		q.Add("command", c)
	}
	u, err := url.Parse(n.URL)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(n.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw, err := n.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	conn := tls.Client(raw, &tls.Config{RootCAs: pool, ServerName: u.Hostname(), NextProtos: []string{"http/1.1"}})
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	keyRaw := make([]byte, 16)
	_, _ = rand.Read(keyRaw)
	key := base64.StdEncoding.EncodeToString(keyRaw)
	path := "/api/v1/namespaces/" + ns + "/pods/" + pod + "/exec?" + q.Encode()
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n",
		path, u.Host, n.AdminToken, key)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
	if err != nil {
		t.Fatalf("exec: %v", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("exec: %s: %s", resp.Status, body)
	}
	// The answer's Sec-WebSocket-Accept is not checked: the API server's upgrade proxy answers
	// for the kubelet's stream, whose key is not this one.
	if p := resp.Header.Get("Sec-WebSocket-Protocol"); p != "v5.channel.k8s.io" {
		t.Fatalf("exec: subprotocol %q, want v5.channel.k8s.io", p)
	}
	if err := wsWrite(conn, append([]byte{0}, stdin...)); err != nil { // channel 0: stdin
		t.Fatalf("exec: writing stdin: %v", err)
	}
	if err := wsWrite(conn, []byte{255, 0}); err != nil { // v5: close channel 0
		t.Fatalf("exec: closing stdin: %v", err)
	}
	var out strings.Builder
	for {
		op, payload, err := wsRead(br)
		if err != nil {
			if err != io.EOF && !strings.Contains(err.Error(), "closed") {
				t.Logf("exec: reading: %v", err)
			}
			break
		}
		if op == 8 { // close
			break
		}
		if (op == 1 || op == 2) && len(payload) > 0 {
			switch payload[0] {
			case 1, 2:
				out.Write(payload[1:])
			case 3: // the exec's status
				var st struct{ Status, Message string }
				if json.Unmarshal(payload[1:], &st) == nil && st.Status != "Success" {
					out.WriteString("[status " + st.Status + ": " + st.Message + "]")
				}
			}
		}
	}
	return out.String()
}

// wsWrite writes one masked binary WebSocket frame, as a client must.
func wsWrite(w io.Writer, payload []byte) error {
	hdr := []byte{0x82}
	switch l := len(payload); {
	case l < 126:
		hdr = append(hdr, 0x80|byte(l))
	case l < 1<<16:
		hdr = append(hdr, 0x80|126, byte(l>>8), byte(l))
	default:
		hdr = append(hdr, 0x80|127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(l))
	}
	mask := make([]byte, 4)
	_, _ = rand.Read(mask)
	hdr = append(hdr, mask...)
	data := make([]byte, len(payload))
	for i, b := range payload {
		data[i] = b ^ mask[i%4]
	}
	_, err := w.Write(append(hdr, data...))
	return err
}

// wsRead reads one WebSocket frame from the server (unmasked, unfragmented as the API sends them).
func wsRead(r io.Reader) (op byte, payload []byte, err error) {
	var h [2]byte
	if _, err = io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	op = h[0] & 0x0f
	l := uint64(h[1] & 0x7f)
	switch l {
	case 126:
		var b [2]byte
		if _, err = io.ReadFull(r, b[:]); err != nil {
			return 0, nil, err
		}
		l = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err = io.ReadFull(r, b[:]); err != nil {
			return 0, nil, err
		}
		l = binary.BigEndian.Uint64(b[:])
	}
	var mask [4]byte
	if h[1]&0x80 != 0 {
		if _, err = io.ReadFull(r, mask[:]); err != nil {
			return 0, nil, err
		}
	}
	if l > 1<<20 {
		return 0, nil, fmt.Errorf("a frame of %d bytes", l)
	}
	payload = make([]byte, l)
	if _, err = io.ReadFull(r, payload); err != nil {
		return 0, nil, err
	}
	if h[1]&0x80 != 0 {
		for i := range payload {
			payload[i] ^= mask[i%4]
		}
	}
	return op, payload, nil
}

// --- native sidecars ---------------------------------------------------------------------------

// TestNativeSidecars: for deploy/examples/cloudsql-native.yaml (the real Cloud SQL Auth Proxy as
// a native sidecar with a startup probe), kubectl sidesync lint says sidesync is not needed
// (native-sidecars-only), and the Job as written, with no sidesync in it, completes: the
// kubelet starts the app once the proxy's startup probe passed and stops the proxy after it.
func TestNativeSidecars(t *testing.T) {
	n := testNode(t)
	if _, err := os.Stat(filepath.Join(realsidecar.CloudSQLBinDir(), "cloud-sql-proxy")); err != nil {
		t.Skip("no Cloud SQL Auth Proxy binary to run (build it with .ci/build-cloudsql-proxy.sh): " + err.Error())
	}
	t.Parallel()
	plain := filepath.Join(examplesDir, "plain", "cloudsql-native.yaml")
	out, err := exec.Command(filepath.Join(bins, "kubectl-sidesync"), "lint", "-f", plain, "-o", "json").Output()
	if err != nil {
		t.Fatalf("kubectl sidesync lint -f %s: %v: %s", plain, err, out)
	}
	var report struct {
		Findings []struct{ Object, Severity, Rule, Message string }
		Errors   int
		Warnings int
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("lint -o json: %v: %s", err, out)
	}
	if report.Errors != 0 || report.Warnings != 0 {
		t.Errorf("lint: %d errors, %d warnings, want none: %s", report.Errors, report.Warnings, out)
	}
	found := false
	for _, f := range report.Findings {
		if f.Object == "Job/db-report" && f.Rule == "native-sidecars-only" && strings.Contains(f.Message, "not needed") {
			found = true
		}
	}
	if !found {
		t.Errorf("lint says nothing of native-sidecars-only for Job/db-report: %s", out)
	}

	stream, err := os.ReadFile(filepath.Join(examplesDir, "cloudsql-native.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stream), "sidesync.io/") || strings.Contains(string(stream), "/sidesync") {
		t.Fatalf("cloudsql-native.yaml has sidesync in it; inject should have left it alone")
	}
	ns := namespace(t, n, "cloudsql-native")
	job := createOne(t, n, ns, "Job", stream)
	p := waitJob(t, n, ns, job, "Complete", time.Now())
	checkNativeRun(t, n, ns, p, "report", "cloud-sql-proxy", readyURL("cloudsql"))
}
