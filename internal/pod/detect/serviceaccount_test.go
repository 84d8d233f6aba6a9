package detect

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// accountVolume writes a service account's volume as the kubelet lays one out (its atomic
// writer): the files in a timestamped directory, ..data a symlink to it, and each name a
// symlink through ..data. make writes each file at the path given; nil leaves it out.
func accountVolume(t *testing.T, files map[string]func(t *testing.T, path string)) string {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "..2026_12_06_10_00_00.000000001")
	mustOK(t, os.Mkdir(data, 0o755))
	mustOK(t, os.Symlink(filepath.Base(data), filepath.Join(dir, "..data")))
	for name, make := range files {
		if make == nil {
			continue
		}
		make(t, filepath.Join(data, name))
		mustOK(t, os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)))
	}
	return dir
}

// holding writes a regular file that holds s.
func holding(s string) func(t *testing.T, path string) {
	return func(t *testing.T, path string) { mustOK(t, os.WriteFile(path, []byte(s), 0o644)) }
}

// fifo makes a named pipe that nobody writes: opening it for reading the usual way blocks.
func fifo(t *testing.T, path string) { mustOK(t, syscall.Mkfifo(path, 0o644)) }

// huge makes a sparse file of 64 MiB, which reading whole would cost 64 MiB.
func huge(t *testing.T, path string) {
	f, err := os.Create(path)
	mustOK(t, err)
	mustOK(t, f.Truncate(64<<20))
	mustOK(t, f.Close())
}

// inPod is the environment of a container in a Kubernetes pod, plus extra.
func inPod(extra ...string) func(string) (string, bool) {
	env := map[string]string{"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "1"}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// askAPI runs Detect with only the Kubernetes API to ask, failing the test if it does not return
// within the guard (a file blocked it). Its own timeout is longer than the guard, so that giving
// up a read at the deadline cannot pass for refusing the file.
func askAPI(t *testing.T, dir string, env func(string) (string, bool)) Result {
	t.Helper()
	o := Options{PodInfoDir: filepath.Join(t.TempDir(), "absent"), KubeAPI: true, ServiceAccountDir: dir, LookupEnv: env, Timeout: time.Hour}
	return detectWithin(t, o, "the service account's files")
}

// TestServiceAccountFilesRefused: the token and the namespace are read as every file someone
// else put in the pod is (internal/pod/regfile): a FIFO in their place is refused at once, never
// waited on, and a file over the bound is refused without being read; detection then says it
// could not look, and why.
func TestServiceAccountFilesRefused(t *testing.T) {
	const token = "eyJhbGciOiJSUzI1NiJ9.e30.c2ln\n"
	tests := []struct {
		name  string
		files map[string]func(t *testing.T, path string)
		env   []string
		want  string // in Result.Failed
		token bool   // a *NoTokenError
	}{
		{"a FIFO for the token", map[string]func(*testing.T, string){"token": fifo},
			nil, "a named pipe (FIFO), not a regular file", true},
		{"a token over the bound", map[string]func(*testing.T, string){"token": huge},
			nil, "larger than 65536 bytes (67108864): a service-account token is a JWT of a few KiB", true},
		{"no token", nil, nil, "no such file or directory", true},
		{"a FIFO for the namespace", map[string]func(*testing.T, string){"token": holding(token), "namespace": fifo}, []string{"POD_NAME=job-x"},
			"cannot tell the pod's namespace and name (set POD_NAMESPACE and POD_NAME from the downward API); the service account's namespace file: a named pipe (FIFO), not a regular file", false},
		{"a namespace over the bound", map[string]func(*testing.T, string){"token": holding(token), "namespace": huge}, []string{"POD_NAME=job-x"},
			"the service account's namespace file: larger than 1024 bytes (67108864): a namespace's name is at most 63 characters", false},
		{"no namespace file", map[string]func(*testing.T, string){"token": holding(token)}, []string{"POD_NAME=job-x"},
			"the service account's namespace file: no such file or directory", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := accountVolume(t, tt.files)
			before := bytesRead(t)
			r := askAPI(t, dir, inPod(tt.env...))
			if read := bytesRead(t) - before; read > 64<<10 {
				t.Errorf("read %d bytes, want at most 64 KiB (the token's bound)", read)
			}
			if r.Failed == nil || !strings.Contains(r.Failed.Error(), tt.want) {
				t.Fatalf("Failed = %v, want it to say %q", r.Failed, tt.want)
			}
			if _, isToken := errors.AsType[*NoTokenError](r.Failed); isToken != tt.token {
				t.Errorf("Failed = %#v: a *NoTokenError %v, want %v", r.Failed, isToken, tt.token)
			}
			if r.Fix == "" {
				t.Error("no Fix")
			}
		})
	}
}
