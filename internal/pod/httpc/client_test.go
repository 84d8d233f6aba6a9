package httpc

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// newSidecar is a real net/http server standing in for Envoy's admin port.
func newSidecar(t testing.TB) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "LIVE\n")
	})
	mux.HandleFunc("/initializing", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, "INITIALIZING\n")
	})
	mux.HandleFunc("/nocontent", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		// Reports what the server saw, in headers, so the client can compare.
		w.Header().Set("X-Seen-UA", r.Header.Get("User-Agent"))
		w.Header().Set("X-Seen-Custom", strings.Join(r.Header.Values("X-Custom"), "|"))
		w.Header().Set("X-Seen-Auth", r.Header.Get("Authorization"))
		w.Header().Set("X-Seen-Content-Length", r.Header.Get("Content-Length"))
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Seen-Body", string(body))
		fmt.Fprintf(w, "%s %d %q", r.Method, r.ContentLength, r.TransferEncoding)
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "part1,")
		w.(http.Flusher).Flush() // the length is unknown from here on: net/http switches to chunked
		fmt.Fprint(w, "part2")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if r.URL.Query().Get("cl") != "" {
			w.Header().Set("Content-Length", strconv.Itoa(n))
		}
		w.Write([]byte(strings.Repeat("x", n)))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestDoAgainstNetHTTP(t *testing.T) {
	srv := newSidecar(t)
	tests := []struct {
		name          string
		method, path  string
		limit         int
		wantStatus    string
		wantBody      string
		wantTruncated bool
		wantHeaders   map[string]string
	}{
		{name: "GET 200 with body", method: "GET", path: "/ready",
			wantStatus: "200 OK", wantBody: "LIVE\n", wantHeaders: map[string]string{"Content-Length": "5"}},
		{name: "empty method is GET without Content-Length", method: "", path: "/echo",
			wantStatus: "200 OK", wantBody: `GET 0 []`, wantHeaders: map[string]string{"X-Seen-Content-Length": ""}},
		{name: "503 initializing", method: "GET", path: "/initializing",
			wantStatus: "503 Service Unavailable", wantBody: "INITIALIZING\n"},
		{name: "204 no body", method: "GET", path: "/nocontent", wantStatus: "204 No Content"},
		{name: "HEAD has no body", method: "HEAD", path: "/ready",
			wantStatus: "200 OK", wantHeaders: map[string]string{"Content-Length": "5"}},
		{name: "POST without body sends length 0", method: "POST", path: "/echo",
			wantStatus: "200 OK", wantBody: `POST 0 []`,
			wantHeaders: map[string]string{"X-Seen-UA": "sidesync", "X-Seen-Body": "", "X-Seen-Content-Length": "0"}},
		{name: "chunked response", method: "GET", path: "/chunked",
			wantStatus: "200 OK", wantBody: "part1,part2", wantHeaders: map[string]string{"transfer-encoding": "chunked"}},
		{name: "Content-Length body exactly at limit", method: "GET", path: "/big?cl=1&n=1000", limit: 1000,
			wantStatus: "200 OK", wantBody: strings.Repeat("x", 1000)},
		{name: "Content-Length body over limit", method: "GET", path: "/big?cl=1&n=1001", limit: 1000,
			wantStatus: "200 OK", wantBody: strings.Repeat("x", 1000), wantTruncated: true},
		{name: "large chunked body truncated", method: "GET", path: "/big?n=300000", limit: 1000,
			wantStatus: "200 OK", wantBody: strings.Repeat("x", 1000), wantTruncated: true},
		{name: "default limit is 64 KiB", method: "GET", path: "/big?cl=1&n=300000",
			wantStatus: "200 OK", wantBody: strings.Repeat("x", 64<<10), wantTruncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := doURL(t, tt.method, srv.URL+tt.path, tt.limit)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			if got, want := resp.Status, tt.wantStatus; got != want {
				t.Errorf("Status = %q, want %q", got, want)
			}
			if got, want := strconv.Itoa(resp.StatusCode), tt.wantStatus[:3]; got != want {
				t.Errorf("StatusCode = %s, want %s", got, want)
			}
			if got, want := resp.Proto, "HTTP/1.1"; got != want {
				t.Errorf("Proto = %q, want %q", got, want)
			}
			if got, want := string(resp.Body), tt.wantBody; got != want {
				t.Errorf("Body = %q (len %d), want %q (len %d)", clip(got), len(got), clip(want), len(want))
			}
			if got, want := resp.Truncated, tt.wantTruncated; got != want {
				t.Errorf("Truncated = %v, want %v", got, want)
			}
			if resp.BodyErr != nil {
				t.Errorf("BodyErr = %v, want nil", resp.BodyErr)
			}
			for name, want := range tt.wantHeaders {
				if got := resp.Get(name); got != want {
					t.Errorf("Get(%q) = %q, want %q", name, got, want)
				}
			}
		})
	}
}

func TestDoSendsBodyAndHeaders(t *testing.T) {
	srv := newSidecar(t)
	u := mustURL(t, strings.Replace(srv.URL, "http://", "http://user:secret@", 1)+"/echo")
	req := &Request{
		Method: "PUT",
		URL:    u,
		Header: []Header{{"X-Custom", "one"}, {"x-custom", "two words"}},
		Body:   []byte("payload"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp, err := Do(ctx, req, 0)
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	for name, want := range map[string]string{
		"X-Seen-Custom": "one|two words",
		"X-Seen-Body":   "payload",
		"X-Seen-Auth":   "", // userinfo is never sent
	} {
		if got := resp.Get(name); got != want {
			t.Errorf("Get(%q) = %q, want %q", name, got, want)
		}
	}
	if got, want := string(resp.Body), `PUT 7 []`; got != want {
		t.Errorf("Body = %q, want %q", got, want)
	}
}

func BenchmarkDo(b *testing.B) {
	srv := newSidecar(b)
	req := &Request{URL: mustURL(b, srv.URL+"/ready")}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := Do(ctx, req, 0)
		if err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode != 200 {
			b.Fatalf("StatusCode = %d", resp.StatusCode)
		}
	}
}
