package realsidecar

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Environment variables read by StartIstioAgent.
const (
	// EnvIstioBinDir names the directory that holds pilot-agent and envoy_bootstrap.json. When
	// it is unset the directory is ${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci/istio, as in
	// .ci/build-istio.sh.
	EnvIstioBinDir = "SIDESYNC_ISTIO_BIN"
	// EnvIstioRequired, when set to anything but "" or "0", turns the skip for a missing agent
	// into a test failure, so that a CI run which built it cannot silently skip.
	EnvIstioRequired = "SIDESYNC_ISTIO_REQUIRED"
)

// Never, as IstioOptions.ConfigAfter or LiveAfter, keeps the stand-in Envoy from ever getting
// there: the agent's /healthz/ready answers 503 for as long as it runs.
const Never = -1

// IstioOptions sets up the stand-in Envoy that the agent runs. The zero value makes Envoy report
// its configuration and LIVE at the agent's first look, so that the agent's first /healthz/ready
// answers 200 once the stand-in listens.
type IstioOptions struct {
	// ConfigAfter is how many of the agent's config polls (the cds/lds update_success stats)
	// the stand-in answers with no update yet; Never: none ever comes (no istiod).
	ConfigAfter int
	// LiveAfter is how many of the agent's liveness polls (server.state and
	// listener_manager.workers_started) the stand-in answers INITIALIZING with no workers;
	// Never: it never becomes LIVE. The agent polls liveness only once the config is in.
	LiveAfter int
	// TerminationDrain is PROXY_CONFIG's terminationDrainDuration, how long the agent lets
	// Envoy drain after SIGTERM; zero leaves Istio's default, 5 s.
	TerminationDrain time.Duration
	// HoldEnvoy keeps the agent from setting up Envoy until IstioAgent.ReleaseEnvoy: its status
	// port opens, but its start blocks reading the xDS root certificate (PROV_CERT's
	// root-cert.pem, which the agent reads without checking that it exists, made a FIFO). That
	// is the window in which the agent's quit handler fails (docs/SIDECARS.md 3.3), held open
	// for as long as the test needs rather than the moment it lasts on a quiet machine.
	HoldEnvoy bool
}

// IstioAgent is Istio's real pilot-agent, started for a test by StartIstioAgent with the
// stand-in Envoy (package envoystandin) as its Envoy. Its exported fields are set at start and
// must not be changed.
type IstioAgent struct {
	// StatusPort is the agent's status server (Istio's 15020) on every address: /healthz/ready
	// and /quitquitquit.
	StatusPort int
	// ReadyPort is the stand-in Envoy's status listener (Istio's 15021) on every address: it
	// forwards /healthz/ready to the agent, as the bootstrap's route does.
	ReadyPort int
	// AdminPort is the stand-in Envoy's admin on 127.0.0.1 (Istio's 15000).
	AdminPort int
	// Dir is the agent's working directory; it writes its bootstrap and sockets there.
	Dir string
	// Path is the agent binary, Envoy the stand-in.
	Path, Envoy string

	cmd     *exec.Cmd
	held    string // the FIFO the agent's start blocks on (IstioOptions.HoldEnvoy); "" if none
	out     *lineLog
	started time.Time
	done    chan struct{} // closed once cmd.Wait has returned
	code    int           // exit code (-1 if killed by a signal); valid once done is closed
}

// IstioBinDir returns the directory where StartIstioAgent looks for pilot-agent.
func IstioBinDir() string {
	if d := os.Getenv(EnvIstioBinDir); d != "" {
		return d
	}
	return filepath.Join(cacheDir(), "sidesync-ci", "istio")
}

// cacheDir is $XDG_CACHE_HOME, else $HOME/.cache, on Linux.
func cacheDir() string {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = filepath.Join(os.TempDir(), ".cache")
	}
	return cache
}

// StartIstioAgent finds pilot-agent in IstioBinDir (skipping the test, with a message naming
// .ci/build-istio.sh, when it is absent), picks free loopback ports, prepares a working
// directory with self-signed workload certificates (so the agent needs no CA), and starts
//
//	pilot-agent proxy sidecar --templateFile <IstioBinDir>/envoy_bootstrap.json
//
// with PROXY_CONFIG {binaryPath: the stand-in, discoveryAddress: 127.0.0.1:15012 (never dialled:
// only Envoy's xDS stream would make the agent dial it), statusPort, proxyAdminPort} and
// ENVOY_STATUS_PORT. It does not wait for readiness: that is the job of the code under test. A
// t.Cleanup kills the agent if it is still running (the stand-in dies with it) and waits for
// it, and logs its output if the test failed.
func StartIstioAgent(t testing.TB, opts IstioOptions) *IstioAgent {
	t.Helper()
	path, template := findIstioAgent(t)
	envoy := EnvoyStandIn(t)
	ports, err := freePorts(3)
	if err != nil {
		t.Fatalf("realsidecar: picking ports: %v", err)
	}
	a := &IstioAgent{
		StatusPort: ports[0], ReadyPort: ports[1], AdminPort: ports[2],
		Dir: t.TempDir(), Path: path, Envoy: envoy,
		out: newLineLog(), done: make(chan struct{}),
	}
	if err := writeWorkloadCerts(a.Dir); err != nil {
		t.Fatalf("realsidecar: workload certificates: %v", err)
	}
	env, err := a.env(opts)
	if err != nil {
		t.Fatalf("realsidecar: %v", err)
	}
	if opts.HoldEnvoy {
		if env, err = a.hold(env); err != nil {
			t.Fatalf("realsidecar: holding Envoy back: %v", err)
		}
	}
	a.cmd = exec.Command(path, "proxy", "sidecar", "--templateFile", template)
	a.cmd.Dir, a.cmd.Env = a.Dir, env
	a.cmd.Stdout, a.cmd.Stderr = a.out, a.out // one pipe: the stand-in's lines keep their order
	// The stand-in inherits the pipe; should it outlive the agent, Wait must not wait for it.
	a.cmd.WaitDelay = 5 * time.Second
	a.started = time.Now()
	if err := a.cmd.Start(); err != nil {
		t.Fatalf("realsidecar: starting %s: %v", path, err)
	}
	go func() {
		_ = a.cmd.Wait() // a non-zero exit is reported through ProcessState
		a.code = a.cmd.ProcessState.ExitCode()
		a.out.close()
		close(a.done)
	}()
	t.Cleanup(func() { a.cleanup(t) })
	return a
}

// findIstioAgent returns the paths of pilot-agent and the bootstrap template in IstioBinDir. It
// skips the test when either is missing, or fails it when EnvIstioRequired is set.
func findIstioAgent(t testing.TB) (agent, template string) {
	t.Helper()
	dir := IstioBinDir()
	agent, template = filepath.Join(dir, "pilot-agent"), filepath.Join(dir, "envoy_bootstrap.json")
	fi, err := os.Stat(agent)
	if err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
		_, err = os.Stat(template)
	} else if err == nil {
		err = fmt.Errorf("%s is not an executable file", agent)
	}
	if err != nil {
		msg := fmt.Sprintf("realsidecar: no pilot-agent and envoy_bootstrap.json in %s: build them with `bash .ci/build-istio.sh` (or set %s)",
			dir, EnvIstioBinDir)
		if r := os.Getenv(EnvIstioRequired); r != "" && r != "0" {
			t.Fatalf("%s; %s is set, so this is a failure", msg, EnvIstioRequired)
		}
		t.Skip(msg)
	}
	if stamp, err := os.ReadFile(filepath.Join(dir, "stamp")); err == nil {
		t.Logf("realsidecar: %s", strings.TrimSpace(string(stamp)))
	}
	return agent, template
}

// env is the agent's whole environment: nothing from the test's (no KUBERNETES_*, ISTIO_* or
// proxy settings leak in) but PATH, HOME and TMPDIR. The agent passes it on to Envoy, which is
// how the stand-in gets its knobs.
func (a *IstioAgent) env(opts IstioOptions) ([]string, error) {
	pc := map[string]any{
		"binaryPath":       a.Envoy,
		"discoveryAddress": "127.0.0.1:15012",
		"statusPort":       a.StatusPort,
		"proxyAdminPort":   a.AdminPort,
	}
	if opts.TerminationDrain > 0 {
		pc["terminationDrainDuration"] = opts.TerminationDrain.String()
	}
	b, err := json.Marshal(pc)
	if err != nil {
		return nil, err
	}
	env := []string{
		"PROXY_CONFIG=" + string(b),
		"ENVOY_STATUS_PORT=" + strconv.Itoa(a.ReadyPort),
		"ENVOY_STANDIN_CONFIG_AFTER=" + polls(opts.ConfigAfter),
		"ENVOY_STANDIN_LIVE_AFTER=" + polls(opts.LiveAfter),
	}
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env, nil
}

// hold makes the agent's start block before it sets up Envoy (IstioOptions.HoldEnvoy): without
// ./etc/certs/root-cert.pem the agent takes PROV_CERT's root-cert.pem as the xDS root
// certificate and reads it, here a FIFO that nothing writes yet. It returns env with PROV_CERT.
func (a *IstioAgent) hold(env []string) ([]string, error) {
	if err := os.Remove(filepath.Join(a.Dir, mountedRootCert)); err != nil {
		return nil, err
	}
	prov := filepath.Join(a.Dir, "prov")
	if err := os.Mkdir(prov, 0o755); err != nil {
		return nil, err
	}
	a.held = filepath.Join(prov, "root-cert.pem")
	if err := syscall.Mkfifo(a.held, 0o600); err != nil {
		return nil, err
	}
	return append(env, "PROV_CERT="+prov), nil
}

// ReleaseEnvoy lets an agent started with IstioOptions.HoldEnvoy go on to set up Envoy: it
// writes the root certificate into the FIFO the agent is reading, then puts a plain file with
// the same certificate in its place for any later read.
func (a *IstioAgent) ReleaseEnvoy(t testing.TB) {
	t.Helper()
	files, err := WorkloadCertFiles()
	if err != nil {
		t.Fatal(err)
	}
	pem := files[mountedRootCert]
	plain := a.held + ".plain"
	if err := os.WriteFile(plain, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	// The open waits for the agent to open the FIFO for reading, which its start does next
	// if it has not yet.
	opened := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(a.held, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.Write(pem)
			err = errors.Join(err, f.Close())
		}
		opened <- err
	}()
	select {
	case err = <-opened:
	case <-a.done:
		err = fmt.Errorf("the agent exited before it read %s", a.held)
	case <-time.After(exitTimeout):
		err = fmt.Errorf("the agent did not read %s in %v", a.held, exitTimeout)
	}
	if err := errors.Join(err, os.Rename(plain, a.held)); err != nil {
		t.Fatalf("realsidecar: releasing Envoy: %v", err)
	}
}

// AwaitStatusPort waits until the agent's status port accepts connections: the agent logs
// "Opening status port" just before it listens.
func (a *IstioAgent) AwaitStatusPort(t testing.TB) {
	t.Helper()
	a.AwaitLog(t, "Opening status port")
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(a.StatusPort))
	deadline := time.Now().Add(exitTimeout)
	for {
		c, err := net.DialTimeout("tcp", addr, exitTimeout)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) || a.Exited() {
			t.Fatalf("realsidecar: the agent's status port %s: %v", addr, err)
		}
		time.Sleep(5 * time.Millisecond) // the listen follows the log line at once
	}
}

func polls(n int) string {
	if n < 0 {
		return "never"
	}
	return strconv.Itoa(n)
}

// cleanup kills the agent if it is still running and waits for it, so that no process outlives
// its test (the stand-in has PR_SET_PDEATHSIG: it dies with the agent), and logs the agent's
// output if the test failed.
func (a *IstioAgent) cleanup(t testing.TB) {
	if !a.Exited() {
		_ = a.cmd.Process.Kill()
		select {
		case <-a.done:
		case <-time.After(exitTimeout):
			t.Errorf("realsidecar: pilot-agent (pid %d) did not exit %v after SIGKILL", a.cmd.Process.Pid, exitTimeout)
		}
	}
	if t.Failed() {
		t.Logf("realsidecar: pilot-agent output (stand-in Envoy lines start with %q):\n%s", eventPrefix, a.Output())
	}
}

// ReadyURL returns Envoy's status listener, http://127.0.0.1:ReadyPort/healthz/ready: what
// Kubernetes probes, and sidesync's istio profile waits on.
func (a *IstioAgent) ReadyURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/healthz/ready", a.ReadyPort)
}

// AgentReadyURL returns the agent's own readiness, http://127.0.0.1:StatusPort/healthz/ready.
func (a *IstioAgent) AgentReadyURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/healthz/ready", a.StatusPort)
}

// QuitURL returns the agent's quit endpoint, http://127.0.0.1:StatusPort/quitquitquit.
func (a *IstioAgent) QuitURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/quitquitquit", a.StatusPort)
}

// Signal sends sig to the agent process.
func (a *IstioAgent) Signal(sig os.Signal) error {
	return a.cmd.Process.Signal(sig)
}

// KillEnvoy sends sig to the stand-in Envoy, as an OOM kill or a crash would end it, once it
// has started. The agent must still be running (so that the stand-in's PID is still its
// child's and cannot have been reused).
func (a *IstioAgent) KillEnvoy(t testing.TB, sig syscall.Signal) {
	t.Helper()
	ev := a.Await(t, "started", nil)
	pid, err := strconv.Atoi(ev.Fields["pid"])
	if err != nil {
		t.Fatalf("realsidecar: stand-in Envoy's started event has no pid: %q", ev.Line)
	}
	if a.Exited() {
		t.Fatalf("realsidecar: KillEnvoy after the agent exited (code %d)", a.code)
	}
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("realsidecar: kill %d (stand-in Envoy): %v", pid, err)
	}
}

// Wait waits for the agent to exit and returns its exit code (-1 if a signal killed it). It
// fails the test if the agent has not exited within 30 seconds.
func (a *IstioAgent) Wait(t testing.TB) int {
	t.Helper()
	return awaitExit(t, a.done, &a.code, "pilot-agent", a.cmd.Process.Pid, a.Output)
}

// Exited reports, without blocking, whether the agent has exited.
func (a *IstioAgent) Exited() bool { return closed(a.done) }

// Started is when the agent was started, for measurements.
func (a *IstioAgent) Started() time.Time { return a.started }

// Output returns what the agent and the stand-in have written so far, in order.
func (a *IstioAgent) Output() string {
	return a.out.String()
}
