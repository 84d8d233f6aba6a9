package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/testing/releasetest"
)

// TestArticleContract runs the article's deployment unchanged: PROXY=true, proxyEndpoint with
// a trailing slash, interval and maxRetries.
func TestArticleContract(t *testing.T) {
	t.Parallel()
	t.Run("PROXY=true waits and quits", func(t *testing.T) {
		e := startEmu(t, "--ready-after", "200ms")
		env := []string{"PROXY=true", "proxyEndpoint=" + e.admin() + "/", "interval=1", "maxRetries=5"}
		r := sidesync(t, env, "--", bin.testcmd, "exit", "0")
		if r.code != 0 {
			t.Fatalf("exit code %d; stderr:\n%s", r.code, r.stderr)
		}
		if e.waitExit() != 0 || e.quits() != 1 {
			t.Errorf("emulator got %d quits", e.quits())
		}
		mustContain(t, r.stderr, "decorrelated jitter (Polly V2), median first delay 1s, 5 retries")
	})
	t.Run("maxRetries exhausted fails", func(t *testing.T) {
		e := startEmu(t, "--never-ready")
		env := []string{"PROXY=true", "proxyEndpoint=" + e.admin() + "/", "interval=0", "maxRetries=2"}
		r := sidesync(t, env, "--", bin.testcmd, "exit", "0")
		if r.code != 69 || e.waitExit() != 0 || e.requests("/ready") != 3 {
			t.Errorf("exit code %d after %d probes, want 69 after 3; stderr:\n%s", r.code, e.requests("/ready"), r.stderr)
		}
	})
	t.Run("PROXY unset touches no sidecar", func(t *testing.T) {
		e := startEmu(t)
		r := sidesync(t, []string{"proxyEndpoint=" + e.admin() + "/"}, "--", bin.testcmd, "exit", "5")
		if r.code != 5 || e.requests("/ready") != 0 || e.quits() != 0 {
			t.Errorf("exit code %d, %d probes, %d quits; want 5, 0, 0", r.code, e.requests("/ready"), e.quits())
		}
	})
}

// TestScuttleContract runs scuttle's variables unchanged.
func TestScuttleContract(t *testing.T) {
	t.Parallel()
	t.Run("ENVOY_ADMIN_API waits and quits", func(t *testing.T) {
		e := startEmu(t, "--ready-after", "100ms")
		generic := startEmu(t)
		env := []string{"ENVOY_ADMIN_API=" + e.admin(), "GENERIC_QUIT_ENDPOINTS=" + generic.admin() + "/quitquitquit"}
		r := sidesync(t, env, "--", bin.testcmd, "exit", "0")
		if r.code != 0 || e.waitExit() != 0 || generic.waitExit() != 0 || e.quits() != 1 || generic.quits() != 1 {
			t.Errorf("exit %d, quits %d and %d; stderr:\n%s", r.code, e.quits(), generic.quits(), r.stderr)
		}
	})
	t.Run("QUIT_WITHOUT_ENVOY_TIMEOUT", func(t *testing.T) {
		e := startEmu(t, "--never-ready")
		r := sidesync(t, []string{"ENVOY_ADMIN_API=" + e.admin(), "QUIT_WITHOUT_ENVOY_TIMEOUT=200ms"}, "--", bin.testcmd, "exit", "0")
		if r.code != 69 {
			t.Errorf("exit %d, want 69", r.code)
		}
	})
	t.Run("WAIT_FOR_ENVOY_TIMEOUT starts anyway", func(t *testing.T) {
		e := startEmu(t, "--never-ready")
		r := sidesync(t, []string{"ENVOY_ADMIN_API=" + e.admin(), "WAIT_FOR_ENVOY_TIMEOUT=200ms"}, "--", bin.testcmd, "exit", "3")
		if r.code != 3 {
			t.Errorf("exit %d, want 3", r.code)
		}
	})
	t.Run("NEVER_KILL_ISTIO_ON_FAILURE", func(t *testing.T) {
		e := startEmu(t)
		r := sidesync(t, []string{"ENVOY_ADMIN_API=" + e.admin(), "NEVER_KILL_ISTIO_ON_FAILURE=true"}, "--", bin.testcmd, "exit", "1")
		if r.code != 1 || e.quits() != 0 {
			t.Errorf("exit %d with %d quits, want 1 and 0", r.code, e.quits())
		}
	})
	t.Run("SCUTTLE_LOGGING=false quiets the log", func(t *testing.T) {
		e := startEmu(t)
		r := sidesync(t, []string{"ENVOY_ADMIN_API=" + e.admin(), "SCUTTLE_LOGGING=false"}, "--", bin.testcmd, "exit", "0")
		if r.code != 0 || r.stderr != "" {
			t.Errorf("exit %d, stderr %q; want 0 and nothing", r.code, r.stderr)
		}
	})
}

func TestWaitSubcommand(t *testing.T) {
	t.Parallel()
	e := startEmu(t, "--ready-after", "100ms")
	if r := sidesync(t, nil, "wait", "--admin", e.admin()); r.code != 0 || e.quits() != 0 {
		t.Errorf("wait: exit %d, %d quits; stderr:\n%s", r.code, e.quits(), r.stderr)
	}
	never := startEmu(t, "--never-ready")
	if r := sidesync(t, nil, "wait", "--admin", never.admin(), "--timeout", "100ms"); r.code != 69 {
		t.Errorf("wait on a never-ready sidecar: exit %d, want 69", r.code)
	}
	if r := sidesync(t, nil, "wait", "--admin", never.admin(), "--timeout", "100ms", "--on-timeout", "start-anyway"); r.code != 0 {
		t.Errorf("wait with start-anyway: exit %d, want 0", r.code)
	}
}

func TestQuitSubcommand(t *testing.T) {
	t.Parallel()
	e := startEmu(t)
	if r := sidesync(t, nil, "quit", "--admin", e.admin()); r.code != 0 || e.waitExit() != 0 {
		t.Errorf("quit: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if r := sidesync(t, nil, "quit", "--admin", closedAdmin(t), "--quit-timeout", "300ms"); r.code != 69 {
		t.Errorf("quit with nothing listening: exit %d, want 69", r.code)
	}
}

func TestVersionAndHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		if r := sidesync(t, nil, args...); r.code != 0 || !strings.HasPrefix(r.stdout, "sidesync ") {
			t.Errorf("%v: exit %d, stdout %q", args, r.code, r.stdout)
		}
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"-help"}} {
		r := sidesync(t, nil, args...)
		if r.code != 0 {
			t.Errorf("%v: exit %d", args, r.code)
		}
		mustContain(t, r.stdout, "Usage:", "--admin URL", "[SIDESYNC_ADMIN]", "PROXY=true", "ENVOY_ADMIN_API", "Exit codes:", "69")
	}
}

// TestBinaryDependencies: the binary that goes into every pod links only the standard library,
// golang.org/x/sys and this module, and not net/http (which would add 1.1 MB and 3.4 MiB of
// memory while waiting), regexp, or the emulators (a test tool).
// crypto/tls is linked for one request: reading the pod from the Kubernetes API.
func TestBinaryDependencies(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command on PATH, to list the binary's dependencies")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if !strings.HasPrefix(p, "github.com/sidesync/sidesync") && !strings.HasPrefix(p, "golang.org/x/sys/") {
			t.Errorf("sidesync links %s", p)
		}
	}
	std, err := exec.Command(goBin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range []string{"net/http", "regexp", "github.com/sidesync/sidesync/internal/testing/emulator", "github.com/sidesync/sidesync/internal/testing/emuproc"} {
		for _, dep := range strings.Fields(string(std)) {
			if dep == p {
				t.Errorf("sidesync links %s", p)
			}
		}
	}
}

// TestReleaseVersion checks that sidesync built as a release is built (scripts/release.sh, which
// .ci/run builds once and hands over in SIDESYNC_RELEASE_DIST) says in "version" the version and
// the commit of this checkout. The default run skips it (releasetest.Dist).
func TestReleaseVersion(t *testing.T) {
	t.Parallel()
	head, err := exec.Command("git", "-c", "safe.directory=*", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skip("needs a git checkout, to compare the stamped commit with HEAD:", strings.TrimSpace(err.Error()))
	}
	dist := releasetest.Dist(t, []string{"sidesync"}, []string{"linux/" + runtime.GOARCH}, "VERSION=", "COMMIT=")
	got, err := exec.Command(filepath.Join(dist, "sidesync-linux-"+runtime.GOARCH), "version").Output()
	if err != nil {
		t.Fatalf("version: %v", err)
	}
	commit := strings.TrimSpace(string(head))
	if !strings.HasPrefix(string(got), "sidesync v") || !strings.Contains(string(got), "(commit "+commit) {
		t.Errorf("version printed %q, want a version and commit %s", got, commit)
	}
}

// TestContractPrecedence (issue 7, fault 5): one order for waiting and quitting alike: a sidecar
// named by a flag or SIDESYNC_* variable is waited for and told to quit, whatever the article's
// and scuttle's variables say; the article's PROXY=true works beside scuttle's other variables.
func TestContractPrecedence(t *testing.T) {
	t.Parallel()
	t.Run("--admin beside scuttle's variables is waited for and quit", func(t *testing.T) {
		e := startEmu(t, "--ready-after-probes", "1")
		r := sidesync(t, []string{"SCUTTLE_LOGGING=true", "START_WITHOUT_ENVOY=false"}, "--admin", e.admin(), "--", bin.testcmd, "exit", "0")
		if r.code != 0 || e.waitExit() != 0 || e.quits() != 1 || e.requests("/ready") != 2 {
			t.Errorf("exit %d, %d probes, %d quits; want 0, 2, 1; stderr:\n%s", r.code, e.requests("/ready"), e.quits(), r.stderr)
		}
	})
	t.Run("--admin beats ENVOY_ADMIN_API for the wait and the quit", func(t *testing.T) {
		flag, scuttle := startEmu(t), startEmu(t)
		r := sidesync(t, []string{"ENVOY_ADMIN_API=" + scuttle.admin()}, "--admin", flag.admin(), "--", bin.testcmd, "exit", "0")
		if r.code != 0 || flag.waitExit() != 0 || flag.quits() != 1 {
			t.Errorf("exit %d, --admin's sidecar got %d quits; want 0 and 1; stderr:\n%s", r.code, flag.quits(), r.stderr)
		}
		if n := scuttle.requests("/ready") + scuttle.quits(); n != 0 {
			t.Errorf("ENVOY_ADMIN_API's sidecar got %d requests, want none", n)
		}
		mustContain(t, r.stderr, "ENVOY_ADMIN_API", "ignored")
	})
	t.Run("PROXY=true beside scuttle's behaviour variables", func(t *testing.T) {
		e := startEmu(t)
		env := []string{"PROXY=true", "proxyEndpoint=" + e.admin() + "/", "SCUTTLE_LOGGING=true"}
		r := sidesync(t, env, "--", bin.testcmd, "exit", "0")
		if r.code != 0 || e.waitExit() != 0 || e.quits() != 1 {
			t.Errorf("exit %d, %d quits; want 0 and 1; stderr:\n%s", r.code, e.quits(), r.stderr)
		}
	})
	t.Run("PROXY=true and ENVOY_ADMIN_API contradict", func(t *testing.T) {
		r := sidesync(t, []string{"PROXY=true", "ENVOY_ADMIN_API=http://127.0.0.1:15000"}, "--", bin.testcmd, "exit", "0")
		if r.code != 2 {
			t.Errorf("exit %d, want 2", r.code)
		}
		mustContain(t, r.stderr, "PROXY=", "ENVOY_ADMIN_API=")
	})
	t.Run("interval without PROXY is the application's", func(t *testing.T) {
		r := sidesync(t, []string{"interval=5m", "maxRetries=lots", "proxyEndpoint=/api"}, "--pod-info", t.TempDir(), "--", bin.testcmd, "exit", "6")
		if r.code != 6 {
			t.Errorf("exit %d, want the command's 6; stderr:\n%s", r.code, r.stderr)
		}
	})
}
