package resolve

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// hang answers nothing until the client goes.
func hang(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// hangAfter answers with status and prefix, flushed, then nothing until the client goes.
func hangAfter(status int, prefix string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		w.Write([]byte(prefix))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

// silentListener accepts connections on 127.0.0.1 and never says a word; it returns the
// image's reference there.
func silentListener(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	return ln.Addr().String() + "/img:1"
}

// TestRegistryHangs: the context bounds every request, wherever the registry stops answering
// (kubectl sidesync inject's --timeout is that context). A registry that answers 503 forever
// is asked again after pauses that are short beside the bound: go-containerregistry's pauses
// (1 s, then 3 s) do not watch the context, and ran 3 s past it.
func TestRegistryHangs(t *testing.T) {
	const timeout = 1100 * time.Millisecond
	tests := []struct {
		name string
		ref  func(t *testing.T) string
		// deadline: the error is the context's; otherwise the registry's last answer.
		deadline bool
	}{
		{"never speaks", silentListener, true},
		{"ping hangs", func(t *testing.T) string { return serve(t, http.HandlerFunc(hang)) }, true},
		{"manifest hangs", func(t *testing.T) string {
			return startHostile(t, &hostile{manifest: hang})
		}, true},
		{"manifest stalls midway", func(t *testing.T) string {
			return startHostile(t, &hostile{manifest: hangAfter(200, `{"schemaVersion": 2, `)})
		}, true},
		{"config hangs", func(t *testing.T) string {
			return startHostile(t, &hostile{manifest: manifestWithConfig(1024), blob: hang})
		}, true},
		{"config stalls midway", func(t *testing.T) string {
			return startHostile(t, &hostile{manifest: manifestWithConfig(1024), blob: hangAfter(200, `{"os": "linux", `)})
		}, true},
		{"503 forever", func(t *testing.T) string {
			return startHostile(t, &hostile{manifest: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "busy", http.StatusServiceUnavailable)
			}})
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ref := tt.ref(t)
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			start := time.Now()
			_, err := Image(ctx, ref, anonymous)
			took := time.Since(start)
			t.Logf("%v after %v", err, took.Round(time.Millisecond))
			if err == nil || errors.Is(err, context.DeadlineExceeded) != tt.deadline {
				t.Errorf("error %v; want the context's deadline: %v", err, tt.deadline)
			}
			// Not a measurement: a guard far above the bound, far below the 3 s overrun.
			if limit := timeout + time.Second; took > limit {
				t.Errorf("returned after %v, more than %v", took, limit)
			}
		})
	}
}

// serve serves h on 127.0.0.1 until the test ends and returns img:1's reference there.
func serve(t *testing.T, h http.Handler) string {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://") + "/img:1"
}
