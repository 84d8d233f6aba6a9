package sidecar

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/sidesync/sidesync/internal/pod/httpc"
	"github.com/sidesync/sidesync/internal/shared/jsonlite"
)

// prober sends the probes of one wait. It prepares each request once and sends them all over
// one connection, kept open between probes when the sidecar allows; it remembers that an Envoy
// has no /ready endpoint; and when an answer repeats, it reuses the previous answer's strings
// and error. A sidecar that keeps answering the same way, ready or not, then costs no
// allocation per probe. What still allocates: a new connection (the first probe, a sidecar that
// closes every connection, one that refuses or times out), an answer that changed, and a TCP
// check, which is a new connection every time.
type prober struct {
	check   Check
	timeout time.Duration // bounds one request (one connect for TCP); zero: ctx alone
	client  httpc.Client

	main       target // the URL of HTTPStatus and TCP checks; Envoy's /ready
	info       target // Envoy's /server_info
	serverInfo bool   // the Envoy has no /ready: ask /server_info instead

	body    string       // the last answer's excerpt
	status  *StatusError // the last "not ready" answer's error
	verdict infoVerdict  // the last /server_info answer's reading
}

// target is one URL that a prober sends to, prepared once.
type target struct {
	url  string           // as given, for ProbeResult.URL
	req  *httpc.Prepared  // HTTP checks
	host string           // TCP checks: host:port
	fast *httpc.Connector // TCP checks on loopback: a connect that allocates nothing
	// refused is the last failure of a TCP check on loopback, and refusedCause what the
	// Connector said, kept so that the same answer costs nothing.
	refused, refusedCause error
	err                   error // why the URL cannot be sent; every probe reports it
}

// infoVerdict is what an Envoy's /server_info answer says: its body, and the state read from it
// or why none could be.
type infoVerdict struct {
	body    []byte
	state   string
	notJSON error // the body is not JSON
	notLive error // the state is not LIVE
	valid   bool
}

// newProber prepares the probes of c, each request bounded by timeout (zero: ctx alone); close
// it when done.
func newProber(c Check, timeout time.Duration) *prober {
	p := &prober{check: c, timeout: timeout}
	p.client.Timeout, p.client.BodyLimit = timeout, bodyExcerptLimit
	p.prepare()
	return p
}

// close closes the connection kept for the next probe.
func (p *prober) close() { p.client.Close() }

func (p *prober) probe(ctx context.Context) ProbeResult {
	start := time.Now()
	var r ProbeResult
	switch p.check.Kind {
	case EnvoyAdmin:
		r = p.probeEnvoy(ctx)
	case TCP:
		r = p.probeTCP(ctx)
	default:
		r = p.probeStatus(ctx, &p.main, p.check.Status)
	}
	r.Took = time.Since(start)
	return r
}

// prepare parses and serialises the check's requests, once per prober.
func (p *prober) prepare() {
	c := p.check
	switch c.Kind {
	case EnvoyAdmin:
		p.main = prepareTarget(joinPath(c.URL, "ready"), "GET", c.Header)
		p.info = prepareTarget(joinPath(c.URL, "server_info"), "GET", c.Header)
	case TCP:
		p.main.url = c.URL
		u, err := url.Parse(c.URL)
		p.main.err = err
		if err == nil {
			p.main.host = u.Host
			p.main.fast = httpc.NewConnector(u.Host) // nil unless a loopback address
		}
	default:
		p.main = prepareTarget(c.URL, c.Method, c.Header)
	}
}

// prepareTarget prepares one HTTP request; a URL that cannot be sent becomes the target's error.
func prepareTarget(rawURL, method string, h []Header) target {
	t := target{url: rawURL}
	req, err := request(method, rawURL, h)
	if err == nil {
		t.req, err = httpc.Prepare(req)
	}
	t.err = err
	return t
}

func (p *prober) probeEnvoy(ctx context.Context) ProbeResult {
	if !p.serverInfo {
		r := p.probeStatus(ctx, &p.main, 0)
		if r.StatusCode != 404 {
			return r
		}
		p.serverInfo = true
	}
	return p.probeServerInfo(ctx)
}

// probeStatus is ready on the status wanted, or any 2xx when want is zero.
func (p *prober) probeStatus(ctx context.Context, t *target, want int) ProbeResult {
	r, _ := p.probeHTTP(ctx, t, want)
	return r
}

// probeHTTP is probeStatus that also returns the answer, if any. The answer is the client's
// and valid until its next request.
func (p *prober) probeHTTP(ctx context.Context, t *target, want int) (ProbeResult, *httpc.Response) {
	r := ProbeResult{URL: t.url}
	if t.err != nil {
		r.Err = t.err
		return r, nil
	}
	resp, err := p.client.Do(ctx, t.req)
	if err != nil {
		r.Err = err
		return r, nil
	}
	r.StatusCode, r.Body = resp.StatusCode, p.excerpt(resp.Body)
	if resp.StatusCode/100 != 2 && want == 0 || want != 0 && resp.StatusCode != want {
		r.Err = p.statusError(resp.StatusCode, resp.Status, r.Body)
		return r, resp
	}
	r.Ready = true
	return r, resp
}

// excerpt is excerpt(b), reusing the previous answer's string when it is the same.
func (p *prober) excerpt(b []byte) string {
	if b = excerptOf(b); string(b) != p.body {
		p.body = string(b)
	}
	return p.body
}

// statusError returns the error of a "not ready" answer, the previous one's when it is the same
// (a StatusError is never changed once made, so probe results can share it).
func (p *prober) statusError(code int, status, body string) *StatusError {
	if e := p.status; e == nil || e.Code != code || e.Status != status || e.Body != body {
		p.status = &StatusError{Code: code, Status: status, Body: body}
	}
	return p.status
}

// probeServerInfo is ready when Envoy's /server_info reports state LIVE.
func (p *prober) probeServerInfo(ctx context.Context) ProbeResult {
	r, resp := p.probeHTTP(ctx, &p.info, 0)
	if !r.Ready {
		return r
	}
	v := &p.verdict
	if !v.valid || !bytes.Equal(resp.Body, v.body) {
		// The body carries the uptime, so this runs about once a second, not once a probe.
		*v = readServerInfo(append(v.body[:0], resp.Body...))
	}
	if v.notJSON != nil {
		r.Ready, r.Err = false, v.notJSON
		return r
	}
	r.Body = v.state
	if v.notLive != nil {
		r.Ready, r.Err = false, v.notLive
	}
	return r
}

// readServerInfo reads the state from a /server_info body, which it keeps.
func readServerInfo(body []byte) infoVerdict {
	v := infoVerdict{body: body, valid: true}
	info, err := jsonlite.Decode(body)
	m, isObject := info.(map[string]any)
	state, isString := m["state"].(string)
	switch {
	case err != nil:
		v.notJSON = fmt.Errorf("server_info is not JSON: %w", err)
		return v
	case !isObject && info != nil, m["state"] != nil && !isString:
		v.notJSON = fmt.Errorf("server_info has no state: %s", shorten(string(body), 80))
		return v
	}
	v.state = state
	if v.state != "LIVE" {
		v.notLive = fmt.Errorf("server_info: state %s", strconv.Quote(v.state))
	}
	return v
}

// pingTCP is a TCP check on loopback that allocates nothing when the answer is the same as the
// previous one. It reports done false when the usual dial must decide.
func (p *prober) pingTCP() (done, ready bool, err error) {
	switch err := p.main.fast.Ping(); {
	case err == nil:
		return true, true, nil
	case errors.Is(err, httpc.ErrWouldWait):
		return false, false, nil
	case p.main.refused != nil && err == p.main.refusedCause:
		return true, false, p.main.refused
	default:
		p.main.refused, p.main.refusedCause = fmt.Errorf("connect %s: %w", p.main.host, err), err
		return true, false, p.main.refused
	}
}

// probeTCP is ready when the address accepts a connection.
func (p *prober) probeTCP(ctx context.Context) ProbeResult {
	r := ProbeResult{URL: p.main.url}
	if p.main.err != nil {
		r.Err = p.main.err
		return r
	}
	if p.main.fast != nil {
		if done, ready, err := p.pingTCP(); done {
			r.Ready, r.Err = ready, err
			return r
		}
	}
	var deadline time.Time
	if p.timeout > 0 {
		deadline = time.Now().Add(p.timeout)
	}
	c, err := httpc.Dial(ctx, p.main.host, deadline) // "localhost" is loopback, never a lookup
	if err != nil {
		r.Err = fmt.Errorf("connect %s: %w", p.main.host, err)
		return r
	}
	c.Close()
	r.Ready = true
	return r
}
