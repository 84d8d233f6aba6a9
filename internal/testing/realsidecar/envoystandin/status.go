package main

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// statusHandler is the status listener: /healthz/ready (a prefix, as the bootstrap's route)
// goes to the agent; anything else gets Envoy's 404 with an empty body. An agent that does not
// answer gets Envoy's 503 "upstream connect error".
func (s *standIn) statusHandler(addr string) http.Handler {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", "envoy")
		s.mu.Lock()
		s.forwarded++
		n := strconv.Itoa(s.forwarded)
		s.mu.Unlock()
		if !strings.HasPrefix(r.URL.Path, "/healthz/ready") {
			s.event("status", "n", n, "listener", addr, "method", r.Method, "path", r.URL.Path, "status", "404")
			w.WriteHeader(http.StatusNotFound)
			return
		}
		req, err := http.NewRequest(r.Method, "http://"+s.agent+r.URL.RequestURI(), nil)
		if err == nil {
			req.Header = r.Header.Clone()
			var resp *http.Response
			if resp, err = client.Do(req); err == nil {
				defer resp.Body.Close()
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
				s.event("status", "n", n, "listener", addr, "method", r.Method, "path", r.URL.Path, "status", strconv.Itoa(resp.StatusCode), "body", string(body))
				for k, vs := range resp.Header {
					w.Header()[k] = vs
				}
				w.Header().Set("Server", "envoy")
				w.WriteHeader(resp.StatusCode)
				w.Write(body)
				return
			}
		}
		reason := "connection failure"
		if errors.Is(err, syscall.ECONNREFUSED) {
			reason = "remote connection failure, transport failure reason: delayed connect error: Connection refused"
		}
		body := "upstream connect error or disconnect/reset before headers. reset reason: " + reason
		s.event("status", "n", n, "listener", addr, "method", r.Method, "path", r.URL.Path, "status", "503", "body", body)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, body)
	})
}
