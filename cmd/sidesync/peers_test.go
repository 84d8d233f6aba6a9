package main

// Several wrapped containers in one pod (internal/pod/peers): the sidecars are told to quit once,
// by the last wrapped container to end. Each test runs two real sidesyncs, as the pod's
// containers "main" and "wait", sharing a state directory, against one emulated sidecar whose
// event lines count the quit requests. The tests wait on log lines, command output and process
// exits, never on time.

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const rules42 = `[{"action":"Restart","exitCodes":{"operator":"In","values":[42]}}]`

// peer is the environment of container name among the wrapped containers main and wait, whose
// state directory is dir.
func peer(dir, name string) []string {
	return []string{"SIDESYNC_PEERS=main,wait", "SIDESYNC_STATE_DIR=" + dir, "SIDESYNC_CONTAINER=" + name}
}

// blocking starts a sidesync whose command runs until its stdin closes, and waits until the
// command has started.
func blocking(t *testing.T, env []string, args ...string) *running {
	t.Helper()
	r := startSidesync(t, env, append(args, "--", bin.testcmd, "block")...)
	if l := next(t, r.stdout, "started"); l != "started" {
		t.Fatalf("command said %q", l)
	}
	return r
}

// end closes the command's stdin, waits for sidesync to exit, and returns its log.
func (r *running) end(wantCode int) string {
	r.t.Helper()
	r.stdin.Close()
	if code := r.exit(); code != wantCode {
		r.t.Errorf("exit %d, want %d; stderr:\n%s", code, wantCode, r.stderr)
	}
	return r.stderr.String()
}

// quitRequests are the emulator's quit requests so far.
func (e *emu) quitRequests() int { return e.requests("/quitquitquit") }

// mustNotQuit fails unless the log is that of a sidesync that kept the sidecars for its peers.
func mustNotQuit(t *testing.T, log string, running string) {
	t.Helper()
	mustContain(t, log, "not telling the sidecars to quit: other wrapped containers still run, and the last to end tells the sidecars to quit",
		"running="+running, `quit="skipped (peers)"`)
	if strings.Contains(log, "telling the sidecar to quit") {
		t.Errorf("told the sidecar to quit while %s runs:\n%s", running, log)
	}
}

// mustQuitOnce fails unless the log is that of a sidesync that told the sidecar to quit, and
// the emulator exited after exactly one quit request.
func mustQuitOnce(t *testing.T, e *emu, log string) {
	t.Helper()
	mustContain(t, log, "INFO sidecar quit sidecar=", "quit=ok")
	emulatorQuitOnce(t, e)
}

// emulatorQuitOnce fails unless the emulator exited after exactly one quit request.
func emulatorQuitOnce(t *testing.T, e *emu) {
	t.Helper()
	if code := e.waitExit(); code != 0 || e.quitRequests() != 1 || e.quits() != 1 {
		t.Errorf("emulator exit %d after %d quit requests (%d taken), want 0 after 1", code, e.quitRequests(), e.quits())
	}
}

// TestPeersLastToEndQuits: the first wrapped container to end keeps the sidecars (its summary
// says "skipped (peers)" and it sends nothing); the last tells them to quit, once.
func TestPeersLastToEndQuits(t *testing.T) {
	t.Parallel()
	e := startEmu(t)
	dir := t.TempDir()
	main := blocking(t, peer(dir, "main"), "--admin", e.admin())
	wait := blocking(t, peer(dir, "wait"), "--admin", e.admin())
	mustNotQuit(t, main.end(0), "wait")
	mainEnded := time.Now()
	if n := e.quitRequests(); n != 0 {
		t.Fatalf("%d quit requests while wait runs", n)
	}
	mustQuitOnce(t, e, wait.end(0))
	quits := e.Events("quit", nil)
	if len(quits) == 1 && quits[0].Time.Before(mainEnded) {
		t.Errorf("the sidecar quit at %v, before main ended at %v", quits[0].Time, mainEnded)
	}
	if mark, _ := os.ReadFile(filepath.Join(dir, "main")); string(mark) != "ended 0\n" {
		t.Errorf("main's mark %q, want \"ended 0\\n\"", mark)
	}
}

// TestPeersEndAtOnce: two wrapped containers that end at the same moment: at least one tells the
// sidecar to quit, at most both do, and the sidecar always quits.
func TestPeersEndAtOnce(t *testing.T) {
	t.Parallel()
	e := startEmu(t)
	dir := t.TempDir()
	main := blocking(t, peer(dir, "main"), "--admin", e.admin())
	wait := blocking(t, peer(dir, "wait"), "--admin", e.admin())
	main.stdin.Close()
	wait.stdin.Close()
	sent := 0
	for _, r := range []*running{main, wait} {
		if code := r.exit(); code != 0 {
			t.Errorf("exit %d; stderr:\n%s", code, r.stderr)
		}
		if strings.Contains(r.stderr.String(), "telling the sidecar to quit") {
			sent++
		}
	}
	if code := e.waitExit(); sent < 1 || sent > 2 || code != 0 || e.quits() != 1 {
		t.Errorf("%d sidesyncs sent the quit, the emulator took %d and exited %d; want 1 or 2, 1, 0\nmain:\n%s\nwait:\n%s",
			sent, e.quits(), code, main.stderr, wait.stderr)
	}
}

// TestPeersRestartInPlace: a container that the kubelet restarts in place after its exit (here a
// restart rule for 42) still runs: its peer that ends meanwhile keeps the sidecars; its next run,
// which ends for good, tells them to quit.
func TestPeersRestartInPlace(t *testing.T) {
	t.Parallel()
	e := startEmu(t)
	dir := t.TempDir()
	wait := blocking(t, peer(dir, "wait"), "--admin", e.admin())
	restarts := []string{"--admin", e.admin(), "--restart-policy", "Never", "--restart-rules", rules42, "--", bin.testcmd}
	first := sidesync(t, peer(dir, "main"), append(restarts, "exit", "42")...)
	if first.code != 42 {
		t.Fatalf("exit %d, want 42; stderr:\n%s", first.code, first.stderr)
	}
	mustContain(t, first.stderr, `quit="skipped (restart)"`)
	if mark, _ := os.ReadFile(filepath.Join(dir, "main")); string(mark) != "running\n" {
		t.Errorf("main's mark after a restart %q, want \"running\\n\"", mark)
	}
	mustNotQuit(t, wait.end(0), "main")
	second := sidesync(t, peer(dir, "main"), append(restarts, "exit", "0")...)
	if second.code != 0 {
		t.Errorf("exit %d; stderr:\n%s", second.code, second.stderr)
	}
	mustQuitOnce(t, e, second.stderr)
}

// TestPeersNeverStarted: a peer without a mark has not started (its image may still be pulling):
// the last to end waits for it, up to --peer-start-timeout. If it starts, it is handed the quit;
// if not, the sidecars are told to quit anyway with a warning, and a peer that starts afterwards
// finds no sidecar and exits 69. After a stop signal nothing is waited for.
func TestPeersNeverStarted(t *testing.T) {
	t.Parallel()
	t.Run("it never starts", func(t *testing.T) {
		e := startEmu(t)
		dir := t.TempDir()
		r := sidesync(t, peer(dir, "main"), "--admin", e.admin(), "--peer-start-timeout", "300ms", "--", bin.testcmd, "exit", "0")
		if r.code != 0 {
			t.Errorf("exit %d; stderr:\n%s", r.code, r.stderr)
		}
		mustContain(t, r.stderr, "waiting for wrapped containers that have not started not_started=wait timeout=300ms",
			"WARN telling the sidecars to quit although wrapped containers never started", "never_started=wait")
		mustQuitOnce(t, e, r.stderr)
		late := sidesync(t, peer(dir, "wait"), "--admin", e.admin(), "--timeout", "300ms", "--", bin.testcmd, "exit", "0")
		if late.code != 69 {
			t.Errorf("the late peer: exit %d, want 69; stderr:\n%s", late.code, late.stderr)
		}
	})
	t.Run("it starts while waited for", func(t *testing.T) {
		e := startEmu(t)
		dir := t.TempDir()
		main := startSidesync(t, peer(dir, "main"), "--admin", e.admin(), "--peer-start-timeout", "1h", "--", bin.testcmd, "exit", "0")
		main.stderr.await(t, "waiting for wrapped containers that have not started")
		wait := blocking(t, peer(dir, "wait"), "--admin", e.admin())
		if code := main.exit(); code != 0 {
			t.Errorf("exit %d; stderr:\n%s", code, main.stderr)
		}
		mustNotQuit(t, main.stderr.String(), "wait")
		mustQuitOnce(t, e, wait.end(0))
	})
	t.Run("after a stop signal", func(t *testing.T) {
		e := startEmu(t)
		dir := t.TempDir()
		main := blocking(t, peer(dir, "main"), "--admin", e.admin(), "--peer-start-timeout", "1h")
		main.signal(syscall.SIGTERM)
		if code := main.exit(); code != 143 {
			t.Errorf("exit %d, want 143; stderr:\n%s", code, main.stderr)
		}
		mustContain(t, main.stderr.String(), "not waiting for wrapped containers that never started: a stop signal came not_started=wait")
		mustQuitOnce(t, e, main.stderr.String())
	})
}

// TestPeersFromAnnotation: without --peers, the pod's sidesync.io/wrapped annotation in the
// downward-API volume names the wrapped containers, as `kubectl sidesync inject` writes it. It
// needs the container's name and the state directory; without them, one warning says what is
// missing and the container quits the sidecars when its own command ends. --peers (or
// SIDESYNC_PEERS), even empty, beats the annotation.
func TestPeersFromAnnotation(t *testing.T) {
	t.Parallel()
	podInfo := t.TempDir()
	ann := "app=\"job\"\nsidesync.io/wrapped=\"main,wait\"\n"
	if err := os.WriteFile(filepath.Join(podInfo, "annotations"), []byte(ann), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("both know their names", func(t *testing.T) {
		e := startEmu(t)
		dir := t.TempDir()
		env := func(name string) []string { return []string{"SIDESYNC_STATE_DIR=" + dir, "SIDESYNC_CONTAINER=" + name} }
		main := blocking(t, env("main"), "--admin", e.admin(), "--pod-info", podInfo)
		wait := blocking(t, env("wait"), "--admin", e.admin(), "--pod-info", podInfo)
		log := main.end(0)
		mustNotQuit(t, log, "wait")
		mustContain(t, log, "from=\"the annotation sidesync.io/wrapped in "+podInfo+"\"")
		mustQuitOnce(t, e, wait.end(0))
	})
	for name, tt := range map[string]struct {
		env  []string
		args []string
		warn string // "" for none: the container is alone
	}{
		"no container name":       {[]string{"SIDESYNC_STATE_DIR=/nowhere"}, nil, "no --container (SIDESYNC_CONTAINER, POD_CONTAINER_NAME) names this container"},
		"no state directory":      {[]string{"POD_CONTAINER_NAME=main"}, nil, "no --state-dir (SIDESYNC_STATE_DIR) names the directory they share"},
		"not among them":          {[]string{"SIDESYNC_STATE_DIR=/nowhere", "SIDESYNC_CONTAINER=app"}, nil, "this container is not among the pod's wrapped containers"},
		"--peers beats it":        {nil, []string{"--peers="}, ""},
		"SIDESYNC_PEERS beats it": {[]string{"SIDESYNC_PEERS=main"}, nil, ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := startEmu(t)
			args := append(append([]string{"--admin", e.admin(), "--pod-info", podInfo}, tt.args...), "--", bin.testcmd, "exit", "0")
			r := sidesync(t, tt.env, args...)
			if r.code != 0 {
				t.Errorf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			if n := strings.Count(r.stderr, "WARN"); tt.warn != "" && (n != 1 || !strings.Contains(r.stderr, tt.warn)) || tt.warn == "" && n != 0 {
				t.Errorf("%d warnings, want %q once:\n%s", n, tt.warn, r.stderr)
			}
			mustQuitOnce(t, e, r.stderr)
		})
	}
}

// TestPeersOtherSubcommands: "sidesync wait" marks nothing, and "sidesync quit" quits whatever
// the peers' marks say.
func TestPeersOtherSubcommands(t *testing.T) {
	t.Parallel()
	e := startEmu(t)
	dir := t.TempDir()
	if r := sidesync(t, peer(dir, "main"), "wait", "--admin", e.admin()); r.code != 0 {
		t.Fatalf("wait: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("sidesync wait left %v in the state directory", entries)
	}
	wait := blocking(t, peer(dir, "wait"), "--admin", e.admin(), "--quit", "never")
	r := sidesync(t, peer(dir, "main"), "quit", "--admin", e.admin())
	if r.code != 0 {
		t.Errorf("quit: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	mustContain(t, r.stderr, "INFO sidecar quit sidecar=")
	emulatorQuitOnce(t, e)
	wait.end(0)
}

// TestPeersUsage: two peers need a state directory and this container's name among them.
func TestPeersUsage(t *testing.T) {
	t.Parallel()
	r := sidesync(t, []string{"SIDESYNC_CONTAINER=app"}, "--peers", "main,wait", "--disabled", "--", bin.testcmd, "exit", "0")
	if r.code != 2 {
		t.Errorf("exit %d, want 2", r.code)
	}
	mustContain(t, r.stderr, `--peers "main,wait" names several wrapped containers: --state-dir (SIDESYNC_STATE_DIR) must name`,
		`SIDESYNC_CONTAINER="app" is not among --peers "main,wait"`)
}

// TestPeersStateDirFaults: a state directory that is not there (the volume is not mounted)
// cannot hold this container's mark: one warning, and the container quits the sidecars when its
// own command ends. A peer's mark that cannot be understood counts as running: the sidecars stay.
func TestPeersStateDirFaults(t *testing.T) {
	t.Parallel()
	t.Run("missing", func(t *testing.T) {
		e := startEmu(t)
		missing := filepath.Join(t.TempDir(), "not-mounted")
		r := sidesync(t, peer(missing, "main"), "--admin", e.admin(), "--", bin.testcmd, "exit", "0")
		if r.code != 0 {
			t.Errorf("exit %d; stderr:\n%s", r.code, r.stderr)
		}
		mustContain(t, r.stderr, "WARN cannot mark this container running among its peers: it tells the sidecars to quit when its own command ends",
			"state_dir="+missing)
		mustQuitOnce(t, e, r.stderr)
	})
	t.Run("a peer's mark is garbage", func(t *testing.T) {
		e := startEmu(t)
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "wait"), []byte("\x00garbage"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := sidesync(t, peer(dir, "main"), "--admin", e.admin(), "--", bin.testcmd, "exit", "0")
		if r.code != 0 {
			t.Errorf("exit %d; stderr:\n%s", r.code, r.stderr)
		}
		mustNotQuit(t, r.stderr, "wait")
	})
}
