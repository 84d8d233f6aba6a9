package httpc

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"
)

// testTimeout bounds every exchange in the tests, so a bug shows up as a failure, not a hang.
const testTimeout = 10 * time.Second

func mustURL(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("url.Parse(%q): %v", raw, err)
	}
	return u
}

// doURL runs one request with testTimeout.
func doURL(t testing.TB, method, raw string, limit int) (*Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	return Do(ctx, &Request{Method: method, URL: mustURL(t, raw)}, limit)
}

// serveRaw listens on addr ("127.0.0.1:0", "[::1]:0") and runs script on each accepted
// connection, which it closes afterwards. The listener is closed, and every script waited
// for, when the test ends. It returns the listener's address, or ok=false when the network
// is not available here.
func serveRaw(t testing.TB, network, addr string, script func(c net.Conn)) (string, bool) {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		return err.Error(), false
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				script(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String(), true
}

// mustServeRaw is serveRaw on IPv4 loopback, which every test machine has.
func mustServeRaw(t testing.TB, script func(c net.Conn)) string {
	t.Helper()
	addr, ok := serveRaw(t, "tcp4", "127.0.0.1:0", script)
	if !ok {
		t.Fatalf("listen on 127.0.0.1: %s", addr)
	}
	return addr
}

// readRequest parses the request with net/http, which also checks that ours is well-formed.
// The returned body is the whole request body.
func readRequest(c net.Conn) (*http.Request, []byte, error) {
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return nil, nil, err
	}
	body, err := io.ReadAll(req.Body)
	return req, body, err
}

// answer is a script that reads the request and writes resp verbatim, then closes.
func answer(resp string) func(c net.Conn) {
	return func(c net.Conn) {
		if _, _, err := readRequest(c); err != nil {
			return
		}
		io.WriteString(c, resp)
	}
}

// waitClose blocks until the client closes its end, the way a stuck server would.
func waitClose(c net.Conn) { io.Copy(io.Discard, c) }
