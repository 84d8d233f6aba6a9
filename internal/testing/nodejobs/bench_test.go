//go:build linux

package nodejobs

import (
	"bufio"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sidesync/sidesync/internal/testing/kubetest"
)

// The benchmarks of this file measure the OSM example on the shared node (BENCHMARKS.md, "On a
// real node"):
//
//	go test -run '^$' -bench 'BenchmarkNode' -benchtime 5x -count 1 .
//
// Each iteration creates one Job in a fresh namespace and waits for it; the namespace's
// creation and deletion are outside the timer, so ns/op is the mean from the Job's creation
// (the POST) to its Complete condition seen by a poll every 50 ms.

// benchPoll is how often the benchmarks poll the API or a cgroup.
const benchPoll = 50 * time.Millisecond

// nativeEnvoyImage is the emulated OSM Envoy listening on every address, so that the kubelet's
// probes (sent to the pod's IP) reach its admin API: a native sidecar's startupProbe.
var nativeEnvoyImage = "sidesync.invalid/sidecar-osm-native:1"

// importNativeEnvoy imports, once, the emulated OSM Envoy whose admin API listens on 0.0.0.0.
func importNativeEnvoy(tb testing.TB, n *kubetest.Node) {
	tb.Helper()
	importImage(tb, n, kubetest.Image{Ref: nativeEnvoyImage,
		Files: map[string]string{"/sidesync-emulator": filepath.Join(bins, "sidesync-emulator")},
		Entrypoint: []string{"/sidesync-emulator", "emulate", "osm", "-ready-after", readyAfter,
			"-listen", "admin=0.0.0.0:15000"}})
}

// osmJob returns the OSM example's Job for delivery (exampleStream's) as an object.
func osmJob(tb testing.TB, delivery string) map[string]any {
	tb.Helper()
	return streamObject(tb, exampleStream(tb, "osm", delivery), "Job")
}

// appContainer returns the Job's container called "job" (the example's app).
func appContainer(tb testing.TB, job map[string]any) map[string]any {
	tb.Helper()
	_, spec := podTemplate(job)
	for _, c := range spec["containers"].([]any) {
		if c := c.(map[string]any); c["name"] == "job" {
			return c
		}
	}
	tb.Fatal("no container job")
	return nil
}

// addEnv adds variables to a container.
func addEnv(c map[string]any, kv ...string) {
	env, _ := c["env"].([]any)
	for i := 0; i+1 < len(kv); i += 2 {
		env = append(env, map[string]any{"name": kv[i], "value": kv[i+1]})
	}
	c["env"] = env
}

// nativeJob is the OSM example without sidesync, its Envoy a native sidecar: an init container
// with restartPolicy Always and a startupProbe on /ready, which the kubelet waits for before it
// starts the app, and stops once the app has ended. The pod does not ask the mesh for its
// sidecar (the stand-in would add a classic one).
func nativeJob(tb testing.TB) map[string]any {
	tb.Helper()
	job := osmJob(tb, "plain")
	tmpl, spec := podTemplate(job)
	delete(tmpl, "metadata")
	spec["initContainers"] = []any{map[string]any{
		"name": "envoy", "image": nativeEnvoyImage, "imagePullPolicy": "Never", "restartPolicy": "Always",
		"startupProbe": map[string]any{
			"httpGet":       map[string]any{"path": "/ready", "port": 15000},
			"periodSeconds": 1, "failureThreshold": 120, "timeoutSeconds": 1,
		},
		"securityContext": sidecarSecurityContext(),
	}}
	return job
}

// pollyJob is the init-copy example with the origin article's policy: Polly's decorrelated
// jitter with a median first delay of interval=1 (second) and maxRetries=10, as sidesync's
// flags write it.
func pollyJob(tb testing.TB) map[string]any {
	tb.Helper()
	job := osmJob(tb, "init-copy")
	c := appContainer(tb, job)
	var args []any
	for _, a := range c["args"].([]any) {
		if a == "--" {
			args = append(args, "--backoff", "polly", "--interval", "1s", "--max-retries", "10")
		}
		args = append(args, a)
	}
	c["args"] = args
	return job
}

// waitComplete polls the Job every benchPoll until it has a final condition, and returns the
// Job and when the poll saw it.
func waitComplete(tb testing.TB, n *kubetest.Node, ns, name string) (jobState, time.Time) {
	tb.Helper()
	deadline := time.Now().Add(jobTimeout)
	for {
		var job jobState
		if n.Do(tb, http.MethodGet, "/apis/batch/v1/namespaces/"+ns+"/jobs/"+name, nil, &job) == http.StatusOK {
			seen := time.Now()
			for _, c := range job.Status.Conditions {
				if c.Status != "True" {
					continue
				}
				if c.Type == "Complete" {
					return job, seen
				}
				if c.Type == "Failed" {
					benchFail(tb, n, ns, name, "Failed")
				}
			}
		}
		if time.Now().After(deadline) {
			benchFail(tb, n, ns, name, "not Complete after "+jobTimeout.String())
		}
		time.Sleep(benchPoll) // polling the API for the Job's end, bounded by the deadline
	}
}

// benchFail fails the benchmark with the Job's pods and logs.
func benchFail(tb testing.TB, n *kubetest.Node, ns, job, why string) {
	tb.Helper()
	logPods(tb, n, ns, jobPods(tb, n, ns, job))
	tb.Fatalf("Job %s/%s: %s", ns, job, why)
}

// appTimes reads the app's own clock reading at its start ("app: TIME started as ...") and the
// kubelet's time stamp of its last line ("app: exit N") from the log of the container app:
// both to the nanosecond, unlike the API's container times, which are whole seconds.
func appTimes(tb testing.TB, n *kubetest.Node, ns, podName, app string) (started, exited time.Time) {
	tb.Helper()
	logs, err := n.PodLogs(ns, podName, app)
	if err != nil || len(logs) == 0 {
		tb.Fatalf("pod %s/%s: no log of %s: %v", ns, podName, app, err)
	}
	sc := bufio.NewScanner(strings.NewReader(logs[len(logs)-1]))
	for sc.Scan() {
		// CRI log line: TIME STREAM TAG MESSAGE
		f := strings.SplitN(sc.Text(), " ", 4)
		if len(f) < 4 {
			continue
		}
		msg := f[3]
		if rest, ok := strings.CutPrefix(msg, "app: "); ok && strings.Contains(rest, " started as ") {
			started, _ = time.Parse(time.RFC3339Nano, strings.Fields(rest)[0])
		}
		if strings.HasPrefix(msg, "app: exit ") {
			exited, _ = time.Parse(time.RFC3339Nano, f[0])
		}
	}
	if started.IsZero() || exited.IsZero() {
		tb.Fatalf("pod %s/%s: the app's start or exit is not in its log:\n%s", ns, podName, logs[len(logs)-1])
	}
	return started, exited
}

// series collects one number per iteration.
type series []float64

// report reports the mean as unit (unless it is the benchmark's own, ns/op's) and, with
// spread, the min, median and max as min-unit, p50-unit and max-unit.
func (s series) report(b *testing.B, unit string, mean, spread bool) {
	if len(s) == 0 {
		return
	}
	var sum float64
	for _, v := range s {
		sum += v
	}
	if mean {
		b.ReportMetric(sum/float64(len(s)), unit)
	}
	if spread {
		sorted := slices.Sorted(slices.Values(s))
		b.ReportMetric(sorted[0], "min-"+unit)
		b.ReportMetric(sorted[len(sorted)/2], "p50-"+unit)
		b.ReportMetric(sorted[len(sorted)-1], "max-"+unit)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkNodeJob measures the OSM example's Job from its creation to its Complete condition:
// with sidesync delivered by an init container's copy and by an image volume, the same app with
// its Envoy as a native sidecar (no sidesync), and sidesync with the origin article's Polly
// policy. The emulated Envoy turns ready readyAfter (2 s) after it starts. Metrics: ms/job, the
// mean of creation → Complete seen (b.Elapsed()/b.N, the timer runs only then), with its min,
// median and max; start-ms/job, creation → the app's own clock reading at its start;
// tail-ms/job, the app's last log line → Complete seen (the sidecar's stop, the pod's and the
// Job's status); api-ms/job, the Job's completionTime minus its creationTimestamp (whole
// seconds, as the API keeps them).
func BenchmarkNodeJob(b *testing.B) {
	n := testNode(b)
	injector(b, n)
	variants := []struct {
		name string
		job  func(testing.TB) map[string]any
	}{
		{"init-copy", func(tb testing.TB) map[string]any { return osmJob(tb, "init-copy") }},
		{"image-volume", func(tb testing.TB) map[string]any { return osmJob(tb, "image-volume") }},
		{"native-sidecar", func(tb testing.TB) map[string]any { importNativeEnvoy(tb, n); return nativeJob(tb) }},
		{"polly", pollyJob},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) { benchJob(b, n, "bench-"+v.name, "job", v.job(b)) })
	}
}

// benchJob runs the Job job once per iteration, each in a fresh namespace named after base, and
// reports BenchmarkNodeJob's metrics; app is the container whose log has the app's start and
// end.
func benchJob(b *testing.B, n *kubetest.Node, base, app string, job map[string]any) {
	name := job["metadata"].(map[string]any)["name"].(string)
	var total, start, tail, api series
	for b.Loop() {
		b.StopTimer()
		ns := namespace(b, n, base)
		serviceAccounts(b, n, ns, []byte(serviceAccountLine(job)))
		b.StartTimer()
		begin := time.Now()
		n.Create(b, "/apis/batch/v1/namespaces/"+ns+"/jobs", job)
		st, seen := waitComplete(b, n, ns, name)
		b.StopTimer()
		started, exited := appTimes(b, n, ns, waitJobPod(b, n, ns, name), app)
		total = append(total, ms(seen.Sub(begin)))
		start = append(start, ms(started.Sub(begin)))
		tail = append(tail, ms(seen.Sub(exited)))
		c, err1 := time.Parse(time.RFC3339, st.Metadata.CreationTimestamp)
		d, err2 := time.Parse(time.RFC3339, st.Status.CompletionTime)
		if err1 == nil && err2 == nil {
			api = append(api, ms(d.Sub(c)))
		}
		deleteNamespace(b, n, ns) // now, not at the end: one namespace at a time
		b.StartTimer()
	}
	b.Logf("per job, in order: creation → Complete %.0f ms; → the app's start %.0f ms; its end → Complete %.0f ms", total, start, tail)
	// The timer ran from each Job's creation to its Complete condition seen: the mean.
	b.ReportMetric(ms(b.Elapsed())/float64(b.N), "ms/job")
	total.report(b, "ms/job", false, true)
	start.report(b, "start-ms/job", true, false)
	tail.report(b, "tail-ms/job", true, false)
	api.report(b, "api-ms/job", true, false)
}

// serviceAccountLine is the Job's pod's serviceAccountName as a YAML line, for serviceAccounts;
// "" without one.
func serviceAccountLine(job map[string]any) string {
	_, spec := podTemplate(job)
	if sa, _ := spec["serviceAccountName"].(string); sa != "" {
		return "serviceAccountName: " + sa
	}
	return ""
}

// BenchmarkNodeNative measures, as BenchmarkNodeJob does, the Cloud SQL example (the real
// proxy) wrapped, as deploy/examples writes it (--native never, its proxy kept classic), and
// converted (`kubectl sidesync inject --native always` of deploy/examples/plain without the
// annotation that keeps the proxy classic): the proxy a native sidecar with the catalog's
// startup probe, no wrapper. The other Job examples' converted output is their wrapped one
// (TestExamplesNative).
//
//	go test -run '^$' -bench 'BenchmarkNodeNative' -benchtime 3x -count 1 .
func BenchmarkNodeNative(b *testing.B) {
	n := testNode(b)
	wrapped := streamObject(b, exampleStream(b, "cloudsql", "init-copy"), "Job")
	stream, _ := injectNative(b, writeJob(b, convertibleCloudSQL(b, "db-migrate")), "always")
	converted := streamObject(b, stream, "Job")
	app := appOf(b, wrapped)
	b.Run("cloudsql/wrapped", func(b *testing.B) { benchJob(b, n, "bench-cloudsql-wrapped", app, wrapped) })
	b.Run("cloudsql/converted", func(b *testing.B) { benchJob(b, n, "bench-cloudsql-native", app, converted) })
}

// BenchmarkNodeMemory measures the peak memory of the OSM example's app container as the
// kubelet's cgroup accounts it (cgroup v1 memory.max_usage_in_bytes, or v2 memory.peak), with
// an app that runs 3 s: with sidesync (init-copy) the container holds sidesync and the app,
// without it (the plain manifest) the app alone; the difference is sidesync's. The cgroup is
// read every 50 ms while the container runs (it goes with the container). Metrics, in KiB:
// peak, from the container's command's start (the peak is reset then); life-peak, the whole
// life's, runc's init included; and the largest rss (anonymous) and cache (page cache and
// tmpfs) of memory.stat.
func BenchmarkNodeMemory(b *testing.B) {
	n := testNode(b)
	injector(b, n)
	for _, v := range []struct{ name, delivery string }{{"sidesync+app", "init-copy"}, {"app-alone", "plain"}} {
		b.Run(v.name, func(b *testing.B) {
			job := osmJob(b, v.delivery)
			addEnv(appContainer(b, job), "APP_SLEEP", "3s")
			name := job["metadata"].(map[string]any)["name"].(string)
			var peak, life, rss, cache series
			for b.Loop() {
				ns := namespace(b, n, "bench-mem-"+strings.ReplaceAll(v.name, "+", "-"))
				n.Create(b, "/apis/batch/v1/namespaces/"+ns+"/jobs", job)
				m := followMemory(b, n, ns, name)
				peak = append(peak, float64(m.peak)/1024)
				life = append(life, float64(m.life)/1024)
				rss = append(rss, float64(m.rss)/1024)
				cache = append(cache, float64(m.cache)/1024)
				if v.delivery != "plain" {
					waitComplete(b, n, ns, name) // the plain Job never completes: its Envoy runs on
				}
				deleteNamespace(b, n, ns) // now, not at the end: one namespace at a time
			}
			b.Logf("per run, in order: peak %.0f KiB; rss %.0f KiB", peak, rss)
			peak.report(b, "peak-KiB", true, true)
			life.report(b, "life-peak-KiB", true, false)
			rss.report(b, "rss-KiB", true, false)
			cache.report(b, "cache-KiB", true, false)
		})
	}
}

// memory is what followMemory read of a container's cgroup.
type memory struct {
	life  int64 // the peak before the reset: the container's whole life, runc's init included
	peak  int64 // the peak after it: the container's own processes
	rss   int64
	cache int64
}

// followMemory finds the cgroup of the Job's container job once it runs and reads it every
// benchPoll until it is gone, returning the largest values seen.
func followMemory(tb testing.TB, n *kubetest.Node, ns, job string) memory {
	tb.Helper()
	deadline := time.Now().Add(jobTimeout)
	var dir string
	podName := waitJobPod(tb, n, ns, job)
	for dir == "" {
		p := getPod(tb, n, ns, podName)
		for _, c := range p.Status.ContainerStatuses {
			if c.Name != "job" || c.ContainerID == "" {
				continue
			}
			if c.State.Running == nil {
				tb.Fatalf("pod %s/%s: container job is not running when first seen with an ID (too short a run to follow)", ns, p.Metadata.Name)
			}
			dir = containerCgroup(tb, p.Metadata.UID, c.ContainerID[strings.Index(c.ContainerID, "://")+3:])
		}
		if time.Now().After(deadline) {
			tb.Fatalf("pod %s/%s: container job not running after %s", ns, p.Metadata.Name, jobTimeout)
		}
		if dir == "" {
			time.Sleep(benchPoll) // polling the API for the container, bounded by the deadline
		}
	}
	// The cgroup's peak so far is runc's init, which runs in it until it executes the
	// container's command (about 4 MiB, more than the command): read it, then reset the peak
	// to the usage of now (cgroup v1: writing 0 to memory.max_usage_in_bytes; v2 has no reset,
	// and the peak stays the whole life's).
	var m memory
	if life, err := readInt(filepath.Join(dir, "memory.max_usage_in_bytes")); err == nil {
		m.life = life
		if err := os.WriteFile(filepath.Join(dir, "memory.max_usage_in_bytes"), []byte("0"), 0o644); err != nil {
			tb.Fatalf("resetting the peak of cgroup %s: %v", dir, err)
		}
	}
	for {
		peak, err := readInt(filepath.Join(dir, "memory.max_usage_in_bytes"))
		if err != nil {
			peak, err = readInt(filepath.Join(dir, "memory.peak"))
		}
		if err != nil {
			break // the container is gone, and its cgroup with it
		}
		m.peak = max(m.peak, peak)
		m.life = max(m.life, peak)
		if stat, err := os.ReadFile(filepath.Join(dir, "memory.stat")); err == nil {
			for line := range strings.Lines(string(stat)) {
				f := strings.Fields(line)
				if len(f) != 2 {
					continue
				}
				v, _ := strconv.ParseInt(f[1], 10, 64)
				switch f[0] {
				case "rss", "anon":
					m.rss = max(m.rss, v)
				case "cache", "file":
					m.cache = max(m.cache, v)
				}
			}
		}
		time.Sleep(benchPoll) // sampling the cgroup until the container ends
	}
	if m.peak == 0 {
		tb.Fatalf("cgroup %s: no memory reading", dir)
	}
	return m
}

// containerCgroup is the memory cgroup of a pod's container under the node's kubelet:
// <root>/kubepods[/<qos>]/pod<UID>/<container ID>, in the memory hierarchy (cgroup v1) or the
// unified one.
func containerCgroup(tb testing.TB, uid, id string) string {
	tb.Helper()
	for _, pattern := range []string{
		"/sys/fs/cgroup/memory/sidesync-node-*/kubepods/*/pod" + uid + "/" + id,
		"/sys/fs/cgroup/memory/sidesync-node-*/kubepods/pod" + uid + "/" + id,
		"/sys/fs/cgroup/sidesync-node-*/kubepods/*/pod" + uid + "/" + id,
		"/sys/fs/cgroup/sidesync-node-*/kubepods/pod" + uid + "/" + id,
	} {
		if m, _ := filepath.Glob(pattern); len(m) == 1 {
			return m[0]
		}
	}
	tb.Fatalf("no memory cgroup for container %s of pod %s", id, uid)
	return ""
}

// readInt reads a cgroup file that holds one number.
func readInt(file string) (int64, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}
