//go:build !nokubeapi

package main

// Kubernetes API faults of docs/FAULTS.md: detection reads the pod from an API server that
// refuses, never answers, answers 403, or answers without end. Each is a loopback TLS listener
// of the test's; the real kube-apiserver's 403 is TestDetectFromKubernetesAPI's.

import (
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFaultKubeAPI: whatever the API server does, detection is bounded (3 s for the request),
// says why it could not look (a warning with the cause), and the command runs at once with its
// exit code kept; with --require-sidecar not being able to look is fatal (69, the command does
// not run). The service-account token never appears in the output.
func TestFaultKubeAPI(t *testing.T) {
	t.Parallel()
	const token = "kube-t0ken-s3cret"
	forbidden := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"kind":"Status","reason":"Forbidden"}`)
	}))
	t.Cleanup(forbidden.Close)
	endless := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(`{"kind":"Pod","metadata":{"annotations":{"x":"` + strings.Repeat("y", 4096) + `"}}}`)
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(endless.Close)
	// A TLS port that accepts and never says a word: not even the handshake.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	closed := strings.TrimPrefix(closedAdmin(t), "http://")

	// httptest's TLS servers share one certificate.
	sa := writeServiceAccount(t, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: forbidden.Certificate().Raw}), token, "jobs")
	tests := []struct {
		name, addr string
		want       []string
	}{
		{"refused", closed, []string{"connection refused"}},
		{"403", forbidden.URL, []string{"403 Forbidden", "kubectl create role sidesync-get-pods --verb=get --resource=pods -n jobs"}},
		{"never answers", silent.Addr().String(), []string{"deadline exceeded"}},
		{"endless answer", endless.URL, []string{"incomplete answer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"--pod-info", filepath.Join(sa, "none"), "--service-account-dir", sa, "--log-level", "debug"}
			start := time.Now()
			r := sidesync(t, apiServerEnv(tt.addr), append(args, "--", bin.testcmd, "exit", "5")...)
			t.Logf("detection and run took %v", time.Since(start))
			if r.code != 5 {
				t.Errorf("exit %d, want the command's 5; stderr:\n%s", r.code, r.stderr)
			}
			mustContain(t, r.stderr, append([]string{"WARN no sidecar configured or detected, but detection could not look"}, tt.want...)...)
			marker := filepath.Join(t.TempDir(), "ran")
			r2 := sidesync(t, apiServerEnv(tt.addr), append(args, "--require-sidecar", "--", bin.testcmd, "touch", marker)...)
			if r2.code != 69 {
				t.Errorf("--require-sidecar: exit %d, want 69; stderr:\n%s", r2.code, r2.stderr)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("--require-sidecar: the command ran")
			}
			if strings.Contains(r.stderr+r2.stderr, token) {
				t.Errorf("the token is in the log:\n%s\n%s", r.stderr, r2.stderr)
			}
		})
	}
}

// TestFaultKubeAPISlow: an API server that answers slowly but within the 3 s bound (headers at
// once, the Pod in three parts 250 ms apart) is read to the end: the Pod is used, with no
// warning. The delays are the fault itself, not a synchronisation.
func TestFaultKubeAPISlow(t *testing.T) {
	t.Parallel()
	const pod = `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"job-pod","namespace":"jobs"},` +
		`"spec":{"restartPolicy":"Never","containers":[{"name":"app","image":"example/app:1"}]}}`
	slow := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		third := len(pod) / 3
		for i, part := range []string{pod[:third], pod[third : 2*third], pod[2*third:]} {
			if i > 0 {
				time.Sleep(250 * time.Millisecond)
			}
			fmt.Fprint(w, part)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(slow.Close)
	sa := writeServiceAccount(t, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: slow.Certificate().Raw}), "t", "jobs")
	start := time.Now()
	r := sidesync(t, apiServerEnv(slow.URL), "--pod-info", filepath.Join(sa, "none"), "--service-account-dir", sa, "--", bin.testcmd, "exit", "5")
	t.Logf("detection and run took %v", time.Since(start))
	if r.code != 5 {
		t.Errorf("exit %d, want the command's 5; stderr:\n%s", r.code, r.stderr)
	}
	mustContain(t, r.stderr, "INFO no sidecar configured or detected: running the command without waiting",
		"Kubernetes API: pod jobs/job-pod has no known sidecar")
	if strings.Contains(r.stderr, "WARN") {
		t.Errorf("a warning for a slow but complete answer:\n%s", r.stderr)
	}
}

// apiServerEnv is the environment of a sidesync in pod jobs/job-pod whose API server is at addr
// (host:port, or an https:// URL).
func apiServerEnv(addr string) []string {
	h, p, _ := net.SplitHostPort(strings.TrimPrefix(addr, "https://"))
	return []string{"KUBERNETES_SERVICE_HOST=" + h, "KUBERNETES_SERVICE_PORT=" + p, "POD_NAME=job-pod"}
}
