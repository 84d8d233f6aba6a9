package main

import (
	"cmp"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// profileCase runs one profile against an emulator: the spec that points sidesync's profile at
// the emulator's ports, and what sidesync must ask of it.
type profileCase struct {
	emulator   string // the emulator profile to start; "" means the profile's own
	spec       func(e *emu) string
	readyPath  string // the path sidesync must probe ("" when the profile has no HTTP readiness check)
	quitPath   string
	quitStatus string
}

// profileCases has one end-to-end case per profile, keyed by profile name;
// TestProfilesComplete checks that every profile of catalog.ProfileNames has one.
func profileCases() map[string]profileCase {
	admin := func(p string) func(*emu) string { return func(e *emu) string { return p + ":port=" + e.port("admin") } }
	return map[string]profileCase{
		"envoy":   {"", admin("envoy"), "/ready", "/quitquitquit", "200"},
		"osm":     {"", admin("osm"), "/ready", "/quitquitquit", "200"},
		"kuma":    {"", admin("kuma"), "/ready", "/quitquitquit", "200"},
		"appmesh": {"", admin("appmesh"), "/ready", "/quitquitquit", "200"},
		"istio": {"", func(e *emu) string {
			return "istio:ready-port=" + e.port("envoy-status") + ",quit-port=" + e.port("status")
		}, "/healthz/ready", "/quitquitquit", "200"},
		"linkerd": {"", admin("linkerd"), "/ready", "/shutdown", "200"},
		"consul": {"", func(e *emu) string {
			return "consul:ready-port=" + e.port("admin") + ",quit-port=" + e.port("lifecycle")
		}, "/ready", "/graceful_shutdown", "200"},
		"dapr": {"", func(e *emu) string { return "dapr:port=" + e.port("http") }, "/v1.0/healthz/outbound", "/v1.0/shutdown", "204"},
		"cloudsql": {"", func(e *emu) string {
			return "cloudsql:ready-port=" + e.port("http") + ",quit-port=" + e.port("admin")
		}, "/startup", "/quitquitquit", "200"},
		"vault": {"", func(e *emu) string { return "vault:port=" + e.port("admin") }, "", "/agent/v1/quit", "200"},
		// The generic profiles, pointed at an emulated Envoy's admin.
		"http": {"envoy", func(e *emu) string {
			base := "http://127.0.0.1:" + e.port("admin")
			return "http:ready=" + base + "/ready,quit=" + base + "/quitquitquit"
		}, "/ready", "/quitquitquit", "200"},
		"tcp": {"envoy", func(e *emu) string {
			return "tcp:ready=tcp://127.0.0.1:" + e.port("admin") + ",quit=http://127.0.0.1:" + e.port("admin") + "/quitquitquit"
		}, "", "/quitquitquit", "200"},
	}
}

// TestProfiles runs every profile against its emulator: sidesync waits on the right endpoint
// until it is ready, runs the command, quits the sidecar, and the sidecar exits 0.
func TestProfiles(t *testing.T) {
	t.Parallel()
	cases := profileCases()
	for _, profile := range slices.Sorted(maps.Keys(cases)) {
		tc := cases[profile]
		t.Run(profile, func(t *testing.T) {
			t.Parallel()
			emulator := cmp.Or(tc.emulator, profile)
			e := startProfile(t, emulator, "--ready-after", "200ms")
			marker := filepath.Join(t.TempDir(), "ran")
			r := sidesync(t, nil, "--sidecar", tc.spec(e), "--", bin.testcmd, "touch", marker)
			if r.code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			if _, err := os.Stat(marker); err != nil {
				t.Error("the command did not run")
			}
			if code := e.waitExit(); code != 0 {
				t.Errorf("sidecar exit code %d, want 0", code)
			}
			if tc.readyPath != "" && e.count("request", func(f map[string]string) bool { return f["path"] == tc.readyPath && f["status"][0] == '2' }) != 1 {
				t.Errorf("no ready answer on %s", tc.readyPath)
			}
			quits := e.count("request", func(f map[string]string) bool {
				return f["path"] == tc.quitPath && f["method"] == "POST" && f["status"] == tc.quitStatus
			})
			if quits != 1 {
				t.Errorf("%d POST %s answered %s, want 1", quits, tc.quitPath, tc.quitStatus)
			}
			mustContain(t, r.stderr, "sidecar="+profile, "sidecar quit sidecar="+profile)
		})
	}
}

// TestSeveralSidecars waits for two sidecars at once and quits both; a sidecar whose quit hangs
// does not delay the other's.
func TestSeveralSidecars(t *testing.T) {
	t.Parallel()
	istio := startProfile(t, "istio", "--ready-after", "300ms")
	csql := startProfile(t, "cloudsql", "--ready-after", "500ms", "--quit-behaviour", "hang")
	spec := "istio:ready-port=" + istio.port("envoy-status") + ",quit-port=" + istio.port("status") +
		",cloudsql:ready-port=" + csql.port("http") + ",quit-port=" + csql.port("admin")
	r := sidesync(t, []string{"SIDESYNC_SIDECARS=" + spec}, "--quit-request-timeout", "1s", "--quit-timeout", "2s", "--", bin.testcmd, "exit", "0")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if istio.waitExit() != 0 {
		t.Error("istio did not exit 0")
	}
	ok := strings.Index(r.stderr, "sidecar quit sidecar=istio")
	failed := strings.Index(r.stderr, "sidecar quit failed sidecar=cloudsql")
	if ok < 0 || failed < 0 || ok > failed {
		t.Errorf("want istio's quit logged before cloudsql's failure:\n%s", r.stderr)
	}
	mustContain(t, r.stderr, "sidecar ready sidecar=istio", "sidecar ready sidecar=cloudsql")
	started := strings.Index(r.stderr, "command started")
	if started < strings.Index(r.stderr, "sidecar ready sidecar=istio") || started < strings.Index(r.stderr, "sidecar ready sidecar=cloudsql") {
		t.Errorf("the command started before both sidecars were ready:\n%s", r.stderr)
	}
}

// TestOneSidecarNeverReady: the command does not start, and both sidecars are still told to quit.
// The wait is 2 s: the log must show linkerd's answer, so a probe must be answered within it.
func TestOneSidecarNeverReady(t *testing.T) {
	t.Parallel()
	envoy := startEmu(t)
	linkerd := startProfile(t, "linkerd", "--never-ready")
	r := sidesync(t, nil, "--sidecar", "envoy:port="+envoy.port("admin"), "--sidecar", "linkerd:port="+linkerd.port("admin"),
		"--timeout", "2s", "--", bin.testcmd, "exit", "0")
	if r.code != 69 {
		t.Errorf("exit %d, want 69; stderr:\n%s", r.code, r.stderr)
	}
	if envoy.waitExit() != 0 || linkerd.waitExit() != 0 || envoy.quits() != 1 || linkerd.quits() != 1 {
		t.Errorf("quits: envoy %d, linkerd %d; want 1 each", envoy.quits(), linkerd.quits())
	}
	mustContain(t, r.stderr, "linkerd: sidecar not ready after", "503 Service Unavailable: not ready")
}

// TestLinkerdShutdownDisabled: Linkerd's 404 names the annotation that enables /shutdown.
func TestLinkerdShutdownDisabled(t *testing.T) {
	t.Parallel()
	e := startProfile(t, "linkerd", "--shutdown-disabled")
	r := sidesync(t, nil, "--sidecar", "linkerd:port="+e.port("admin"), "--", bin.testcmd, "exit", "3")
	if r.code != 3 {
		t.Errorf("exit %d, want the command's 3", r.code)
	}
	mustContain(t, r.stderr, "404 Not Found: shutdown endpoint is not enabled", "config.linkerd.io/proxy-admin-shutdown: enabled", "after 1 attempts")
}

// TestQuitFromLoopback: Istio and Linkerd answer 403 to a quit from another address, which
// sidesync never sends on its own; given the pod IP, the error says why.
func TestQuitFromLoopback(t *testing.T) {
	t.Parallel()
	ip := nonLoopbackIP(t)
	for _, tc := range []struct{ profile, spec string }{
		{"istio", "istio:host=%s,ready-port=%s,quit-port=%s"},
		{"linkerd", "linkerd:host=%s,port=%s"},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			knobs := []string{"--listen", "0.0.0.0:0"}
			if tc.profile == "istio" {
				knobs = []string{"--listen", "status=0.0.0.0:0", "--listen", "envoy-status=0.0.0.0:0"}
			}
			e := startProfile(t, tc.profile, knobs...)
			spec := strings.Replace(tc.spec, "%s", ip, 1)
			if tc.profile == "istio" {
				spec = strings.Replace(strings.Replace(spec, "%s", e.port("envoy-status"), 1), "%s", e.port("status"), 1)
			} else {
				spec = strings.Replace(spec, "%s", e.port("admin"), 1)
			}
			r := sidesync(t, nil, "--sidecar", spec, "--allow-remote-quit", "--", bin.testcmd, "exit", "0")
			if r.code != 0 {
				t.Errorf("exit %d, want 0", r.code)
			}
			mustContain(t, r.stderr, "403 Forbidden", "accepts this call only from localhost")
			if e.quits() != 0 {
				t.Error("the sidecar quit on a non-loopback request")
			}
		})
	}
}

// nonLoopbackIP returns an IPv4 address of this machine that is not loopback.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Skip("needs a non-loopback IPv4 address, which this machine lacks")
	return ""
}

// TestDaprToken: the quit carries DAPR_API_TOKEN, and the token never reaches the log.
func TestDaprToken(t *testing.T) {
	t.Parallel()
	const token = "t0ken-s3cret"
	e := startProfile(t, "dapr", "--api-token", token)
	spec := "dapr:port=" + e.port("http")
	r := sidesync(t, []string{"DAPR_API_TOKEN=" + token}, "--sidecar", spec, "--log-level", "debug", "--", bin.testcmd, "exit", "0")
	if r.code != 0 || e.waitExit() != 0 || strings.Contains(r.stderr, token) {
		t.Errorf("with the token: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	e2 := startProfile(t, "dapr", "--api-token", token)
	r = sidesync(t, nil, "--sidecar", "dapr:port="+e2.port("http"), "--", bin.testcmd, "exit", "0")
	mustContain(t, r.stderr, "401", "set DAPR_API_TOKEN")
}

// TestDaprWaitsOnOutbound: /v1.0/healthz waits for the app, which a job starts only after the
// sidecar is ready: waiting on it deadlocks, waiting on /healthz/outbound does not.
func TestDaprWaitsOnOutbound(t *testing.T) {
	t.Parallel()
	e := startProfile(t, "dapr", "--app-channel", "--ready-after", "100ms")
	healthz := "http:ready=http://127.0.0.1:" + e.port("http") + "/v1.0/healthz"
	if r := sidesync(t, nil, "--sidecar", healthz, "--timeout", "500ms", "--", bin.testcmd, "exit", "0"); r.code != 69 {
		t.Errorf("waiting on /v1.0/healthz: exit %d, want 69 (the deadlock)", r.code)
	}
	if r := sidesync(t, nil, "--sidecar", "dapr:port="+e.port("http"), "--", bin.testcmd, "exit", "0"); r.code != 0 {
		t.Errorf("the dapr profile: exit %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
}

// TestLocalhostIPv6: sidesync never takes "localhost" to mean 127.0.0.1. It resolves the name
// and tries every address: a sidecar on ::1 only is reached when localhost is ::1, and one on
// 127.0.0.1 only is still reached when localhost resolves to ::1 first. Each case runs sidesync
// in a mount namespace of its own with that /etc/hosts (needs root and util-linux's unshare).
func TestLocalhostIPv6(t *testing.T) {
	t.Parallel()
	unshare, err := exec.LookPath("unshare")
	if os.Geteuid() != 0 || err != nil {
		t.Skip("needs root and unshare to give sidesync its own /etc/hosts")
	}
	if l, err := net.Listen("tcp", "[::1]:0"); err != nil {
		t.Skip("needs an IPv6 loopback (::1), which this machine lacks")
	} else {
		l.Close()
	}
	for _, tc := range []struct{ name, hosts, listen string }{
		{"localhost is ::1 only", "::1 localhost\n", "[::1]:0"},
		{"::1 first, sidecar on 127.0.0.1", "::1 localhost\n127.0.0.1 localhost\n", "127.0.0.1:0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hosts := filepath.Join(t.TempDir(), "hosts")
			os.WriteFile(hosts, []byte(tc.hosts), 0o644)
			e := startProfile(t, "cloudsql", "--listen", "http="+tc.listen, "--listen", "admin="+tc.listen)
			spec := "cloudsql:host=localhost,ready-port=" + e.port("http") + ",quit-port=" + e.port("admin")
			r := runProgram(t, nil, unshare, "--mount", "sh", "-c", `mount --bind "$0" /etc/hosts && exec "$@"`, hosts,
				bin.sidesync, "--sidecar", spec, "--", bin.testcmd, "exit", "0")
			if r.code != 0 || e.waitExit() != 0 {
				t.Errorf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			mustContain(t, r.stderr, "sidecar ready sidecar=cloudsql url=http://localhost:", "sidecar quit sidecar=cloudsql url=http://localhost:")
		})
	}
}

// TestNativeSidecars: a native sidecar is waited for but never told to quit; one with a startup
// probe is not even waited for.
func TestNativeSidecars(t *testing.T) {
	t.Parallel()
	e := startProfile(t, "istio", "--ready-after", "100ms")
	ports := "ready-port=" + e.port("envoy-status") + ",quit-port=" + e.port("status")
	r := sidesync(t, nil, "--sidecar", "istio:native=true,"+ports, "--", bin.testcmd, "exit", "0")
	e.await("request", func(f map[string]string) bool { return f["path"] == "/healthz/ready" })
	if r.code != 0 || e.quits() != 0 {
		t.Errorf("native: exit %d, %d quits, %d probes; want 0, 0, some", r.code, e.quits(), e.requests("/healthz/ready"))
	}
	mustContain(t, r.stderr, "not telling a native sidecar to quit")
	before := e.requests("/healthz/ready")
	r = sidesync(t, nil, "--sidecar", "istio:native=true,startup-probe=true,"+ports, "--", bin.testcmd, "exit", "0")
	if r.code != 0 || e.quits() != 0 || e.requests("/healthz/ready") != before {
		t.Errorf("native with startup probe: exit %d, %d quits, %d new probes; want 0, 0, 0", r.code, e.quits(), e.requests("/healthz/ready")-before)
	}
	mustContain(t, r.stderr, "startup probe Kubernetes waited for", "sidesync has nothing to wait for or quit")
}

// TestDetectFromAnnotations: with no sidecar configured, the pod's annotations in a downward-API
// volume name it, with its port.
func TestDetectFromAnnotations(t *testing.T) {
	t.Parallel()
	e := startProfile(t, "linkerd", "--ready-after", "100ms")
	dir := t.TempDir()
	ann := "linkerd.io/proxy-version=\"edge-26.8.3\"\nconfig.linkerd.io/admin-port=\"" + e.port("admin") +
		"\"\nconfig.linkerd.io/proxy-admin-shutdown=\"enabled\"\nconfig.linkerd.io/proxy-enable-native-sidecar=\"false\"\n"
	os.WriteFile(filepath.Join(dir, "annotations"), []byte(ann), 0o644)
	r := sidesync(t, nil, "--pod-info", dir, "--kube-api=false", "--", bin.testcmd, "exit", "0")
	if r.code != 0 || e.waitExit() != 0 || e.quits() != 1 {
		t.Errorf("exit %d, %d quits; stderr:\n%s", r.code, e.quits(), r.stderr)
	}
	mustContain(t, r.stderr, "detected sidecar sidecar=linkerd", `by="annotation linkerd.io/proxy-version"`)
}

// TestNothingDetected: no configuration and nothing found runs the command at once, saying so.
func TestNothingDetected(t *testing.T) {
	t.Parallel()
	r := sidesync(t, nil, "--pod-info", filepath.Join(t.TempDir(), "none"), "--service-account-dir", t.TempDir(), "--", bin.testcmd, "exit", "4")
	if r.code != 4 {
		t.Errorf("exit %d, want 4", r.code)
	}
	if n := strings.Count(r.stderr, "no sidecar configured or detected"); n != 1 {
		t.Errorf("said %d times:\n%s", n, r.stderr)
	}
}

// TestCheck prints one line per sidecar and fails when one is not ready.
func TestCheck(t *testing.T) {
	t.Parallel()
	envoy := startEmu(t)
	csql := startProfile(t, "cloudsql", "--never-ready")
	r := sidesync(t, nil, "check", "--sidecar", "envoy:port="+envoy.port("admin"), "--sidecar",
		"cloudsql:ready-port="+csql.port("http")+",quit-port="+csql.port("admin")+",native=true")
	if r.code != 69 {
		t.Errorf("exit %d, want 69", r.code)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "SIDECAR") {
		t.Fatalf("table:\n%s", r.stdout)
	}
	if !strings.Contains(lines[1], "envoy") || !strings.Contains(lines[1], "ready (200") || !strings.HasSuffix(lines[1], "no") {
		t.Errorf("envoy line: %q", lines[1])
	}
	if !strings.Contains(lines[2], "cloudsql") || !strings.Contains(lines[2], "not ready: 503") || !strings.HasSuffix(lines[2], "yes") {
		t.Errorf("cloudsql line: %q", lines[2])
	}
	if envoy.quits() != 0 || csql.quits() != 0 {
		t.Error("check told a sidecar to quit")
	}
	if r := sidesync(t, nil, "check", "--sidecar", "envoy:port="+envoy.port("admin")); r.code != 0 {
		t.Errorf("all ready: exit %d", r.code)
	}
}
