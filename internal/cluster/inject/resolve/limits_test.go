package resolve

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const mib = 1 << 20

// hostile is a registry on loopback that serves one image, img:1, whose manifest and config
// blob answers come from the test, and counts the requests for blobs.
type hostile struct {
	manifest, blob http.HandlerFunc
	blobs          atomic.Int32
}

func (h *hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/v2/":
		w.WriteHeader(http.StatusOK)
	case strings.HasPrefix(r.URL.Path, "/v2/img/manifests/"):
		h.manifest(w, r)
	case strings.HasPrefix(r.URL.Path, "/v2/img/blobs/"):
		h.blobs.Add(1)
		h.blob(w, r)
	default:
		http.NotFound(w, r)
	}
}

// startHostile serves h on 127.0.0.1 until the test ends and returns the image's reference.
func startHostile(t *testing.T, h *hostile) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://") + "/img:1"
}

// manifestWithConfig answers with an image manifest whose config descriptor declares size.
func manifestWithConfig(size int64) http.HandlerFunc {
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, Config: v1.Descriptor{
		MediaType: types.OCIConfigJSON, Size: size,
		Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("0", 64)}}}
	b, _ := json.Marshal(m)
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", string(types.OCIManifestSchema1))
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Write(b)
	}
}

// stream answers with status and n bytes of prefix then spaces; with declared, Content-Length
// says n, else the body is chunked. It stops when the client goes.
func stream(status int, prefix string, n int64, declared bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if declared {
			w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		}
		w.WriteHeader(status)
		io.WriteString(w, prefix)
		chunk := []byte(strings.Repeat(" ", 64<<10))
		for left := n - int64(len(prefix)); left > 0; left -= int64(len(chunk)) {
			if _, err := w.Write(chunk[:min(left, int64(len(chunk)))]); err != nil {
				return
			}
		}
	}
}

// hugeHeader answers with a header of n bytes.
func hugeHeader(n int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Padding", strings.Repeat("a", n))
		w.WriteHeader(http.StatusOK)
	}
}

// allocated is how many bytes f allocates on the heap (in this process: the registry's
// allocations count too, which only makes the bound stricter).
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestRegistryAnswersBounded: what a registry sends is read up to a bound, whatever it
// declares. A config descriptor larger than MaxConfig (or of no size) is refused before it is
// fetched; no answer (manifest, index, error body, header) is read past its bound. Today's code
// allocated 1,223 MiB for a config that claims 512 MiB (and as much for one of no size), 241
// MiB for a manifest of 512 MiB, and took a header of 8 MiB.
func TestRegistryAnswersBounded(t *testing.T) {
	// What one resolve may allocate, all told: io.ReadAll's growing buffer takes twice what it
	// reads, 10 MiB for a 4 MiB answer (19 MiB under -race).
	const bound = 8 * MaxAnswer
	tests := []struct {
		name      string
		h         *hostile
		wantErr   string
		wantBlobs int32
	}{
		{"config claims 512 MiB", &hostile{manifest: manifestWithConfig(512 * mib), blob: stream(200, "", 512*mib, true)},
			"config of 536870912 bytes: larger than 4 MiB", 0},
		{"config of no size, 512 MiB sent", &hostile{manifest: manifestWithConfig(-1), blob: stream(200, "", 512*mib, false)},
			"config of -1 bytes", 0},
		{"config claims 1 KiB, 512 MiB sent", &hostile{manifest: manifestWithConfig(1024), blob: stream(200, "", 512*mib, false)},
			"error verifying", 1},
		{"config claims 4 MiB, 512 MiB sent", &hostile{manifest: manifestWithConfig(4 * mib), blob: stream(200, "", 512*mib, false)},
			"error verifying", 1},
		{"manifest of 512 MiB", &hostile{manifest: stream(200, `{"schemaVersion": 2, "x": "`, 512*mib, false)},
			"larger than 4 MiB", 0},
		{"manifest of 512 MiB, declared", &hostile{manifest: stream(200, `{"schemaVersion": 2, "x": "`, 512*mib, true)},
			"larger than 4 MiB", 0},
		{"404 with 512 MiB", &hostile{manifest: stream(404, `{"errors": [{"code": "MANIFEST_UNKNOWN", "message": "`, 512*mib, false)},
			"", 0}, // go-containerregistry reads 64 KiB of an error
		{"header of 8 MiB", &hostile{manifest: hugeHeader(8 * mib)}, "header", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := startHostile(t, tt.h)
			var err error
			n := allocated(func() { _, err = resolveOne(t, ref, anonymous) })
			t.Logf("allocated %.1f MiB: %v", float64(n)/mib, err)
			if n > bound {
				t.Errorf("allocated %.1f MiB, bound %d MiB", float64(n)/mib, bound/mib)
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) { // "" for any error
				t.Errorf("error %v, want one saying %q", err, tt.wantErr)
			}
			if got := tt.h.blobs.Load(); got != tt.wantBlobs {
				t.Errorf("%d requests for the config blob, want %d", got, tt.wantBlobs)
			}
		})
	}
}

// TestConfigWithinBound: a config of just under MaxConfig is read.
func TestConfigWithinBound(t *testing.T) {
	cf := v1.ConfigFile{OS: "linux", Architecture: "amd64", Config: v1.Config{Entrypoint: []string{"/app"},
		Labels: map[string]string{"padding": strings.Repeat("p", 4*mib-1024)}}}
	raw, _ := json.Marshal(cf)
	digest, size, _ := v1.SHA256(strings.NewReader(string(raw)))
	m, _ := json.Marshal(v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1,
		Config: v1.Descriptor{MediaType: types.OCIConfigJSON, Size: size, Digest: digest}})
	h := &hostile{
		manifest: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", string(types.OCIManifestSchema1))
			w.Write(m)
		},
		blob: func(w http.ResponseWriter, r *http.Request) { w.Write(raw) },
	}
	got, err := resolveOne(t, startHostile(t, h), anonymous)
	if err != nil || fmt.Sprint(got.Platforms) != "map[linux/amd64:{[/app] []}]" {
		t.Errorf("a config of %d bytes: %v, %v", size, got.Platforms, err)
	}
}

// TestLimitBodies: an answer of up to the bound is read whole; one byte more is an error,
// found on reading it, or before reading anything when the answer declares its length.
func TestLimitBodies(t *testing.T) {
	tests := []struct {
		name     string
		n        int64
		declared bool
		wantErr  bool
	}{
		{"bound, chunked", 10, false, false},
		{"bound, declared", 10, true, false},
		{"one more, chunked", 11, false, true},
		{"one more, declared", 11, true, true},
		{"empty", 0, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(stream(200, "", tt.n, tt.declared))
			t.Cleanup(srv.Close)
			c := &http.Client{Transport: limitBodies{base: http.DefaultTransport, max: 10}}
			resp, err := c.Get(srv.URL + "/v2/x?token=secret")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if (err != nil) != tt.wantErr {
				t.Errorf("read %d bytes, error %v; want an error: %v", len(b), err, tt.wantErr)
			}
			if tt.wantErr && (len(b) > 10 || !strings.HasSuffix(err.Error(), "/v2/x is larger than 10 bytes: not read")) {
				t.Errorf("read %d bytes, error %v; want at most 10 and the URL without its query", len(b), err)
			}
		})
	}
}
