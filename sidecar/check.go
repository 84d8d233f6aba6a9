package sidecar

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sidesync/sidesync/internal/httpc"
)

// Header is one HTTP header field sent with a probe or a quit call.
type Header struct {
	Name, Value string
	// Secret keeps the value out of logs and errors (an API token, say).
	Secret bool
}

// CheckKind says how a Check decides that a sidecar is ready.
type CheckKind int

const (
	// HTTPStatus sends Method to URL; any 2xx answer means ready (Dapr answers 204, Envoy 200).
	HTTPStatus CheckKind = iota
	// EnvoyAdmin treats URL as an Envoy admin base URL: GET <URL>/ready must answer 200 (which
	// Envoy does only in state LIVE); an Envoy too old to have /ready answers 404, and then
	// GET <URL>/server_info must report "state": "LIVE" (sidecar-protocols.md 1.3, 1.4).
	EnvoyAdmin
	// TCP is ready once URL's host and port (tcp://HOST:PORT) accept a connection.
	TCP
)

// Check describes how to tell whether a sidecar is ready.
type Check struct {
	Kind   CheckKind
	URL    string // http:// URL; for EnvoyAdmin the admin base, e.g. http://127.0.0.1:15000; tcp://HOST:PORT for TCP
	Method string // HTTPStatus only; empty means GET
	Status int    // HTTPStatus only: the one status that means ready; zero means any 2xx
	Header []Header
}

// ProbeResult is the outcome of one probe.
type ProbeResult struct {
	URL        string        // the URL that gave the verdict
	Ready      bool          // the sidecar is ready
	StatusCode int           // 0 when no answer came
	Body       string        // a short excerpt of the answer, for logs
	Err        error         // why it is not ready; nil when Ready
	Took       time.Duration // how long the probe took
}

// bodyExcerptLimit bounds what a probe reads: Envoy's /server_info is a few KiB of JSON.
const bodyExcerptLimit = 64 << 10

// Probe checks once whether the sidecar is ready; ctx bounds the probe.
func Probe(ctx context.Context, c Check) ProbeResult {
	p := prober{check: c}
	return p.probe(ctx)
}

// prober remembers, across the probes of one wait, that an Envoy has no /ready endpoint.
type prober struct {
	check      Check
	serverInfo bool
}

func (p *prober) probe(ctx context.Context) ProbeResult {
	start := time.Now()
	var r ProbeResult
	switch p.check.Kind {
	case EnvoyAdmin:
		r = p.probeEnvoy(ctx)
	case TCP:
		r = probeTCP(ctx, p.check.URL)
	default:
		r = probeStatus(ctx, p.check.URL, p.check.Method, p.check.Status, p.check.Header)
	}
	r.Took = time.Since(start)
	return r
}

func (p *prober) probeEnvoy(ctx context.Context) ProbeResult {
	if !p.serverInfo {
		r := probeStatus(ctx, joinPath(p.check.URL, "ready"), "GET", 0, p.check.Header)
		if r.StatusCode != 404 {
			return r
		}
		p.serverInfo = true
	}
	return probeServerInfo(ctx, joinPath(p.check.URL, "server_info"), p.check.Header)
}

// probeStatus is ready on the status wanted, or any 2xx when want is zero.
func probeStatus(ctx context.Context, rawURL, method string, want int, h []Header) ProbeResult {
	r, _ := probeHTTP(ctx, rawURL, method, want, h)
	return r
}

// probeHTTP is probeStatus that also returns the answer, if any.
func probeHTTP(ctx context.Context, rawURL, method string, want int, h []Header) (ProbeResult, *httpc.Response) {
	r := ProbeResult{URL: rawURL}
	resp, err := send(ctx, method, rawURL, h)
	if err != nil {
		r.Err = err
		return r, nil
	}
	r.StatusCode, r.Body = resp.StatusCode, excerpt(resp.Body)
	if resp.StatusCode/100 != 2 && want == 0 || want != 0 && resp.StatusCode != want {
		r.Err = &StatusError{Code: resp.StatusCode, Status: resp.Status, Body: r.Body}
		return r, resp
	}
	r.Ready = true
	return r, resp
}

// probeServerInfo is ready when Envoy's /server_info reports state LIVE.
func probeServerInfo(ctx context.Context, rawURL string, h []Header) ProbeResult {
	r, resp := probeHTTP(ctx, rawURL, "GET", 0, h)
	if !r.Ready {
		return r
	}
	var info struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal(resp.Body, &info); err != nil {
		r.Ready, r.Err = false, fmt.Errorf("server_info is not JSON: %w", err)
		return r
	}
	r.Body = info.State
	if info.State != "LIVE" {
		r.Ready, r.Err = false, fmt.Errorf("server_info: state %s", strconv.Quote(info.State))
	}
	return r
}

// probeTCP is ready when the address accepts a connection.
func probeTCP(ctx context.Context, rawURL string) ProbeResult {
	r := ProbeResult{URL: rawURL}
	u, err := url.Parse(rawURL)
	if err != nil {
		r.Err = err
		return r
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		r.Err = fmt.Errorf("connect %s: %w", u.Host, err)
		return r
	}
	c.Close()
	r.Ready = true
	return r
}

// send performs one request and returns the whole (bounded) answer.
func send(ctx context.Context, method, rawURL string, h []Header) (*httpc.Response, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	req := &httpc.Request{Method: method, URL: u}
	for _, x := range h {
		req.Header = append(req.Header, httpc.Header{Name: x.Name, Value: x.Value})
	}
	return httpc.Do(ctx, req, bodyExcerptLimit)
}

// joinPath appends elem to base's path with exactly one slash, so that both
// "http://127.0.0.1:15000" and the article's "http://127.0.0.1:15000/" give ".../ready"
// (scuttle's fmt.Sprintf("%s/server_info") gives "//server_info", which Envoy answers 404).
func joinPath(base, elem string) string {
	u, err := url.Parse(base)
	if err != nil {
		return strings.TrimSuffix(base, "/") + "/" + elem
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + elem
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u.String()
}

// excerpt turns a body into one short printable line for logs.
func excerpt(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 4096 {
		s = s[:4096]
	}
	return s
}

// StatusError is an answer whose status code means "not ready" or "refused".
type StatusError struct {
	Code   int
	Status string // e.g. "503 Service Unavailable"
	Body   string // excerpt
}

func (e *StatusError) Error() string {
	status := e.Status
	if status == "" {
		status = strconv.Itoa(e.Code)
	}
	if e.Body == "" {
		return status
	}
	return fmt.Sprintf("%s: %s", status, shorten(e.Body, 200))
}

// shorten quotes s if it has control characters and cuts it to n bytes for one log line.
func shorten(s string, n int) string {
	if len(s) > n {
		s = s[:n] + "..."
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return strconv.Quote(s)
	}
	return s
}
