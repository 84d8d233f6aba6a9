// Package realsidecar runs real sidecar programs for tests, so that sidesync's readiness and quit
// logic is exercised against the real thing rather than an imitation of it.
//
// The sidecars are built from source by scripts in .ci/ into a cache directory outside the
// repository; this package only runs them, and skips the test when a binary is missing (or fails
// it, when the matching *_REQUIRED variable is set, as CI may do). It uses only the standard
// library.
package realsidecar

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
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
	p.cmd = exec.Command(path,
		"--token", "fake-token",
		"--health-check",
		"--http-address", "127.0.0.1",
		"--http-port", strconv.Itoa(p.HTTPPort),
		"--quitquitquit",
		"--admin-port", strconv.Itoa(p.AdminPort),
		"--port", strconv.Itoa(p.SQLPort),
		CloudSQLInstance,
	)
	p.cmd.Env = proxyEnv()
	p.cmd.Stdout = p.out // the same comparable writer: exec calls Write from one goroutine
	p.cmd.Stderr = p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("realsidecar: starting %s: %v", path, err)
	}
	go func() {
		_ = p.cmd.Wait() // a non-zero exit is reported through ProcessState
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()

	t.Cleanup(func() {
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
	})
	return p
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
	select {
	case <-p.done:
		return p.code
	case <-time.After(exitTimeout):
		t.Fatalf("realsidecar: cloud-sql-proxy (pid %d) still running after %v; output:\n%s",
			p.cmd.Process.Pid, exitTimeout, p.Output())
		return -1
	}
}

// Exited reports, without blocking, whether the process has exited.
func (p *CloudSQLProxy) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

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

// freePorts returns n distinct TCP ports that were free on 127.0.0.1. All n listeners are held
// open together so that the ports differ; they are closed before returning, so another process
// could still take one before the proxy binds it (it then exits with a bind error).
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		addr, ok := l.Addr().(*net.TCPAddr)
		if !ok {
			return nil, errors.New("listener address is not TCP")
		}
		ports = append(ports, addr.Port)
	}
	return ports, nil
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
