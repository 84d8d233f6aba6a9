package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	rt "github.com/sidesync/sidesync/internal/testing/registrytest"
)

// hangingRegistry is a registry on 127.0.0.1 that never answers; it returns its host:port.
func hangingRegistry(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestInjectStrict: with --strict, an image that cannot be read (404, a registry that never
// answers within --timeout) is exit 2 with nothing on stdout, and the message names the image
// and every container that needs it; without --strict it is a warning, exit 0, the container
// left alone. Today's code had no --strict: a 404 or a timeout was always exit 0.
func TestInjectStrict(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	host := rt.Start(t)
	rt.PushImage(t, host+"/ok:1", rt.Platform{OS: "linux", Architecture: "amd64", Entrypoint: []string{"/ok"}})
	hung := hangingRegistry(t)
	manifests := "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  containers:\n" +
		"  - {name: a, image: \"" + host + "/missing:1\"}\n  - {name: b, image: \"" + host + "/missing:1\"}\n" +
		"  - {name: ok, image: \"" + host + "/ok:1\"}\n  - {name: slow, image: \"" + hung + "/slow:1\"}\n" +
		"---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n" +
		"      containers:\n      - {name: c, image: \"" + host + "/missing:1\"}\n"
	tests := []struct {
		name     string
		in       string
		args     []string
		wantCode int
		want     []string // in stderr
	}{
		{"strict", manifests, []string{"--resolve", "--strict", "--timeout=500ms"}, 2, []string{
			"kubectl sidesync inject: --strict: 2 of 3 images could not be read from their registries, so their containers would be left unwrapped; nothing is written:\n",
			"\n  " + host + "/missing:1, for container a of Pod/p (document 1), container b of Pod/p (document 1), container c of Job/j (document 2): ",
			"NAME_UNKNOWN",
			"\n  " + hung + "/slow:1, for container slow of Pod/p (document 1): ",
			"context deadline exceeded",
		}},
		{"strict, every image read", podOf(host + "/ok:1"), []string{"--resolve", "--strict"}, 0, []string{"Pod/p: wrapped c (init-copy)\n"}},
		{"not strict", manifests, []string{"--resolve", "--timeout=500ms"}, 0, []string{
			"kubectl sidesync inject: warning: cannot read the image " + host + "/missing:1 from its registry: ",
			"kubectl sidesync inject: warning: cannot read the image " + hung + "/slow:1 from its registry: ",
			"Pod/p: left unchanged (an app container cannot be wrapped); left a (no command), b (no command), ok (not wrapped: another app of the pod cannot be), slow (no command)\n",
		}},
		{"strict without resolve", manifests, []string{"--strict"}, 2, []string{"--strict needs --resolve"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := injectRun(t, tt.in, append([]string{injectImage}, tt.args...)...)
			if code != tt.wantCode || (code == 2) != (stdout == "") {
				t.Errorf("exit %d, %d bytes on stdout; want %d, and output only on 0", code, len(stdout), tt.wantCode)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
		})
	}
}
