package sidecar

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// keepAliveServer answers every request on a connection with answer and keeps the connection
// open, as Envoy's admin does. It allocates nothing per request, so that a benchmark's allocs/op
// counts the client's alone. It returns the base URL and the number of connections accepted.
func keepAliveServer(tb testing.TB, answer string) (string, *atomic.Int64) {
	reply := []byte(answer)
	return routingServer(tb, func([]byte) []byte { return reply })
}

// routingServer is keepAliveServer that answers each request head with answer(head).
func routingServer(tb testing.TB, answer func(head []byte) []byte) (string, *atomic.Int64) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var accepted atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]struct{}{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns[c] = struct{}{}
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				serveKeepAlive(c, answer)
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
				c.Close()
			}()
		}
	}()
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + ln.Addr().String(), &accepted
}

// serveKeepAlive answers each request head (up to the empty line; probes have no body) with
// answer(head) until the peer closes.
func serveKeepAlive(c net.Conn, answer func(head []byte) []byte) {
	bp := serverBufs.Get().(*[]byte)
	defer serverBufs.Put(bp)
	buf, n := *bp, 0
	for {
		end := bytes.Index(buf[:n], []byte("\r\n\r\n"))
		if end < 0 {
			if n == len(buf) {
				return
			}
			m, err := c.Read(buf[n:])
			if err != nil {
				return
			}
			n += m
			continue
		}
		if _, err := c.Write(answer(buf[:end])); err != nil {
			return
		}
		n = copy(buf, buf[end+4:n])
	}
}

// serverBufs keeps the server's per-connection buffers from counting against a client that
// dials once per request.
var serverBufs = sync.Pool{New: func() any { b := make([]byte, 8<<10); return &b }}

const (
	answerLive = "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=UTF-8\r\nServer: envoy\r\nContent-Length: 5\r\n\r\nLIVE\n"
	answerInit = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=UTF-8\r\nServer: envoy\r\nContent-Length: 13\r\n\r\nINITIALIZING\n"
)

// BenchmarkProbeKeepAlive is one probe of a wait (waiter.probe) against a sidecar that keeps
// connections alive, ready or not, as WaitReady sends it: under a context that can end, with a
// logger at level Info. Its allocs/op must stay 0: that is what keeps a long wait's memory flat.
func BenchmarkProbeKeepAlive(b *testing.B) {
	for _, tt := range []struct {
		name, answer string
		ready        bool
	}{
		{"ready", answerLive, true},
		{"not-ready", answerInit, false},
	} {
		b.Run(tt.name, func(b *testing.B) {
			url, accepted := keepAliveServer(b, tt.answer)
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			w := newWaiter(Check{Kind: EnvoyAdmin, URL: url}, WaitOptions{Logger: log})
			defer w.close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b.ReportAllocs()
			for b.Loop() {
				if w.probe(ctx) != tt.ready {
					b.Fatal(w.last.Err)
				}
			}
			if n := accepted.Load(); n != 1 {
				b.Errorf("the sidecar accepted %d connections, want 1", n)
			}
		})
	}
}

// BenchmarkProbeNewConnection is BenchmarkProbeKeepAlive against a sidecar that closes every
// connection after its answer, and one that refuses connections (not listening yet): each
// probe is a new connection, whose allocations are net's.
func BenchmarkProbeNewConnection(b *testing.B) {
	closing := "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 13\r\n\r\nINITIALIZING\n"
	for _, tt := range []struct {
		name string
		url  func(b *testing.B) string
	}{
		// The server would keep the connection; the client closes it, as "Connection: close" says.
		{"closed-after-answer", func(b *testing.B) string { u, _ := keepAliveServer(b, closing); return u }},
		{"refused", func(b *testing.B) string { return closedURL(b) }},
	} {
		b.Run(tt.name, func(b *testing.B) {
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			w := newWaiter(Check{Kind: EnvoyAdmin, URL: tt.url(b)}, WaitOptions{Logger: log})
			defer w.close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b.ReportAllocs()
			for b.Loop() {
				if w.probe(ctx) {
					b.Fatal("ready")
				}
			}
		})
	}
}
