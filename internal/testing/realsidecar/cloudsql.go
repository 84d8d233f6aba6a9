package realsidecar

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Environment variables read by StartCloudSQLProxy.
const (
	// EnvCloudSQLBinDir names the directory that holds the cloud-sql-proxy binary. When it is
	// unset the directory is ${XDG_CACHE_HOME:-$HOME/.cache}/sidesync-ci/cloudsql, as in
	// .ci/build-cloudsql-proxy.sh.
	EnvCloudSQLBinDir = "SIDESYNC_CLOUDSQL_BIN"
	// EnvCloudSQLRequired, when set to anything but "" or "0", turns the skip for a missing
	// binary into a test failure, so that a CI run which built it cannot silently skip.
	EnvCloudSQLRequired = "SIDESYNC_CLOUDSQL_REQUIRED"
)

// CloudSQLInstance is the instance connection name given to the proxy. The proxy never contacts
// it unless a client connects to SQLPort, which tests must not do (that would try the network).
const CloudSQLInstance = "some-project:us-central1:instance"

// exitTimeout bounds Wait and the wait after the cleanup's kill.
const exitTimeout = 30 * time.Second

// CloudSQLProxy is a running Cloud SQL Auth Proxy v2 started for a test by StartCloudSQLProxy.
// Its exported fields are set at start and must not be changed.
type CloudSQLProxy struct {
	// HTTPPort is the health-check server's port on 127.0.0.1 (/startup, /readiness, /liveness).
	HTTPPort int
	// AdminPort is the admin server's port on localhost (/quitquitquit).
	AdminPort int
	// SQLPort is the port the proxy listens on for database clients. Never connect to it.
	SQLPort int
	// Path is the binary that was started.
	Path string

	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{} // closed once cmd.Wait has returned
	code int           // exit code (-1 if killed by a signal); valid once done is closed
}

// CloudSQLBinDir returns the directory where StartCloudSQLProxy looks for cloud-sql-proxy.
func CloudSQLBinDir() string {
	if d := os.Getenv(EnvCloudSQLBinDir); d != "" {
		return d
	}
	cache, err := os.UserCacheDir() // $XDG_CACHE_HOME, else $HOME/.cache, on Linux
	if err != nil {
		cache = filepath.Join(os.TempDir(), ".cache")
	}
	return filepath.Join(cache, "sidesync-ci", "cloudsql")
}

// StartCloudSQLProxy finds the cloud-sql-proxy binary in CloudSQLBinDir (skipping the test, with
// a message naming .ci/build-cloudsql-proxy.sh, when it is absent), picks free loopback ports and
// starts it offline with a fake token, the health check and /quitquitquit enabled:
//
//	cloud-sql-proxy --token fake-token --health-check --http-address 127.0.0.1 --http-port HTTPPort
//	    --quitquitquit --admin-port AdminPort --port SQLPort some-project:us-central1:instance
//
// It does not wait for readiness: that is the job of the code under test. A t.Cleanup kills the
// process if it is still running and waits for it, and logs its output if the test failed.
func StartCloudSQLProxy(t testing.TB) *CloudSQLProxy {
	t.Helper()
	path := findCloudSQLProxy(t)
	ports, err := freePorts(3)
	if err != nil {
		t.Fatalf("realsidecar: picking ports: %v", err)
	}
	p := &CloudSQLProxy{
		HTTPPort:  ports[0],
		AdminPort: ports[1],
		SQLPort:   ports[2],
		Path:      path,
		out:       &syncBuffer{},
		done:      make(chan struct{}),
	}
	if err := p.start(); err != nil {
		t.Fatalf("realsidecar: starting %s: %v", path, err)
	}
	t.Cleanup(func() { p.cleanup(t) })
	return p
}

// findCloudSQLProxy returns the path of cloud-sql-proxy in CloudSQLBinDir. It skips the test
// when the binary is missing or not executable, or fails it when EnvCloudSQLRequired is set, so
// that a CI run which built it cannot skip silently.
func findCloudSQLProxy(t testing.TB) string {
	t.Helper()
	dir := CloudSQLBinDir()
	path := filepath.Join(dir, "cloud-sql-proxy")
	if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		msg := fmt.Sprintf("realsidecar: no cloud-sql-proxy in %s: build it with `bash .ci/build-cloudsql-proxy.sh` (or set %s)",
			dir, EnvCloudSQLBinDir)
		if r := os.Getenv(EnvCloudSQLRequired); r != "" && r != "0" {
			t.Fatalf("%s; %s is set, so this is a failure", msg, EnvCloudSQLRequired)
		}
		t.Skip(msg)
	}
	if stamp, err := os.ReadFile(filepath.Join(dir, "stamp")); err == nil {
		t.Logf("realsidecar: %s", strings.TrimSpace(string(stamp)))
	}
	return path
}

// args returns the proxy's command-line arguments, shown in StartCloudSQLProxy's doc comment.
func (p *CloudSQLProxy) args() []string {
	return []string{
		"--token", "fake-token",
		"--health-check",
		"--http-address", "127.0.0.1",
		"--http-port", strconv.Itoa(p.HTTPPort),
		"--quitquitquit",
		"--admin-port", strconv.Itoa(p.AdminPort),
		"--port", strconv.Itoa(p.SQLPort),
		CloudSQLInstance,
	}
}

// start starts the proxy and a goroutine that records its exit code and closes p.done.
func (p *CloudSQLProxy) start() error {
	p.cmd = exec.Command(p.Path, p.args()...)
	p.cmd.Env = proxyEnv()
	p.cmd.Stdout = p.out // the same comparable writer: exec calls Write from one goroutine
	p.cmd.Stderr = p.out
	if err := p.cmd.Start(); err != nil {
		return err
	}
	go func() {
		_ = p.cmd.Wait() // a non-zero exit is reported through ProcessState
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	return nil
}

// cleanup kills the proxy if it is still running and waits for it, so that no process outlives
// its test, and logs the proxy's output if the test failed.
func (p *CloudSQLProxy) cleanup(t testing.TB) {
	if !p.Exited() {
		_ = p.cmd.Process.Kill()
		select {
		case <-p.done:
		case <-time.After(exitTimeout):
			t.Errorf("realsidecar: cloud-sql-proxy (pid %d) did not exit %v after SIGKILL", p.cmd.Process.Pid, exitTimeout)
		}
	}
	if t.Failed() {
		t.Logf("realsidecar: cloud-sql-proxy output:\n%s", p.Output())
	}
}

// StartupURL returns the health check's startup probe, http://127.0.0.1:HTTPPort/startup.
func (p *CloudSQLProxy) StartupURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/startup", p.HTTPPort)
}

// QuitURL returns the admin server's quit endpoint, http://localhost:AdminPort/quitquitquit.
func (p *CloudSQLProxy) QuitURL() string {
	return fmt.Sprintf("http://localhost:%d/quitquitquit", p.AdminPort)
}

// Signal sends sig to the proxy process.
func (p *CloudSQLProxy) Signal(sig os.Signal) error {
	return p.cmd.Process.Signal(sig)
}

// Wait waits for the process to exit and returns its exit code (-1 if a signal killed it before
// it could exit by itself). It fails the test if the process has not exited within 30 seconds.
func (p *CloudSQLProxy) Wait(t testing.TB) int {
	t.Helper()
	return awaitExit(t, p.done, &p.code, "cloud-sql-proxy", p.cmd.Process.Pid, p.Output)
}

// Exited reports, without blocking, whether the process has exited.
func (p *CloudSQLProxy) Exited() bool { return closed(p.done) }

// Output returns what the process has written so far to stdout and stderr, interleaved.
func (p *CloudSQLProxy) Output() string {
	return p.out.String()
}

// proxyEnv is the test's environment without the proxy's own CSQL_PROXY_* settings and Google
// credentials, which would change its flags or make it try to authenticate for real.
func proxyEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "CSQL_PROXY_") || strings.HasPrefix(kv, "GOOGLE_APPLICATION_CREDENTIALS=") {
			continue
		}
		env = append(env, kv)
	}
	return env
}
