package emulator

import (
	"context"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"
)

// mustProfile returns the profile called name or fails the test.
func mustProfile(t *testing.T, name string) Profile {
	t.Helper()
	p, ok := LookupProfile(name)
	if !ok {
		t.Fatalf("no profile %q", name)
	}
	return p
}

// startProfile starts an in-process sidecar of the named profile that is
// closed when the test ends.
func startProfile(t *testing.T, name string, opts Options) (*Sidecar, *recorder) {
	t.Helper()
	rec := newRecorder()
	opts.Events = rec
	sc := New(mustProfile(t, name), opts)
	if err := sc.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { sc.Close() })
	return sc, rec
}

// inState adds to opts what makes the state clock deterministic: "ready"
// at once, "initializing" forever, "starting" for an hour.
func inState(state string, opts Options) Options {
	switch state {
	case "initializing":
		opts.NeverReady = true
	case "starting":
		opts.ReadyAfter = time.Hour
	}
	return opts
}

// send sends one request with header fields given as name, value pairs
// and fails the test if no answer arrives.
func send(t *testing.T, method, url string, header ...string) result {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := newClient(guard).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return result{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

// endpoint is one row of a profile's endpoint table: a request in a state
// and the exact answer.
type endpoint struct {
	state    string  // "ready", "initializing" or "starting"
	opts     Options // profile knobs; the state is added
	listener string
	method   string
	target   string
	header   []string // request header name, value pairs
	status   int
	body     string
	ctype    string // exact content-type; "" means none at all
	quits    bool   // whether the request is an accepted shutdown
}

// checkEndpoints runs every row on a fresh sidecar of the profile through
// net/http and checks status, body, content type and whether it quit.
func checkEndpoints(t *testing.T, profile string, rows []endpoint) {
	t.Helper()
	for _, row := range rows {
		name := row.listener + " " + row.state + " " + row.method + " " + row.target
		t.Run(name, func(t *testing.T) {
			sc, rec := startProfile(t, profile, inState(row.state, row.opts))
			res := send(t, row.method, "http://"+sc.AddrOf(row.listener)+row.target, row.header...)
			if res.status != row.status || res.body != row.body {
				t.Errorf("= %d %q, want %d %q", res.status, res.body, row.status, row.body)
			}
			checkContentType(t, res, row.ctype)
			// The quit event is written before the answer, so it is
			// there by now if it ever will be.
			if rec.has("quit") != row.quits {
				t.Errorf("quit = %v, want %v; events:\n%s", rec.has("quit"), row.quits, rec.text())
			}
		})
	}
}

// checkContentType checks the content-type header exactly; want "" means
// the answer must have none.
func checkContentType(t *testing.T, res result, want string) {
	t.Helper()
	got := res.header.Values("Content-Type")
	if want == "" && len(got) != 0 || want != "" && !slices.Equal(got, []string{want}) {
		t.Errorf("content-type %q, want %q", got, want)
	}
}

// TestProfilesBind: every profile has a unique name, uniquely named
// listeners, and a route table for each.
func TestProfilesBind(t *testing.T) {
	var names []string
	for _, p := range Profiles() {
		if p.Name == "" || slices.Contains(names, p.Name) || len(p.Listeners) == 0 {
			t.Errorf("profile %q: empty, duplicate or without listeners", p.Name)
		}
		names = append(names, p.Name)
		var listeners []string
		for _, l := range p.Listeners {
			if l.Name == "" || slices.Contains(listeners, l.Name) || l.Port == 0 || l.Help == "" {
				t.Errorf("profile %s: bad listener %+v", p.Name, l)
			}
			listeners = append(listeners, l.Name)
		}
		sc := New(p, Options{}) // panics on a listener without routes
		if len(sc.binding.Muxes) != len(p.Listeners) {
			t.Errorf("profile %s binds %d route tables for %d listeners", p.Name, len(sc.binding.Muxes), len(p.Listeners))
		}
		if got, ok := LookupProfile(p.Name); !ok || got.Name != p.Name {
			t.Errorf("LookupProfile(%q) = %v, %v", p.Name, got.Name, ok)
		}
	}
	want := []string{"envoy", "osm", "appmesh", "kuma", "istio", "linkerd", "consul", "dapr", "cloudsql", "vault"}
	if !slices.Equal(names, want) {
		t.Errorf("profiles %q, want %q", names, want)
	}
}

// quitPath is one way to shut a profile down and what must follow.
type quitPath struct {
	profile  string
	opts     Options
	listener string
	method   string
	target   string
	header   []string
	status   int
	code     int           // exit code
	minDelay time.Duration // least time from quit to exit
}

// TestQuitPaths: each accepted shutdown answers, writes quit then exit
// with the right code after the right delay, and closes every listener.
func TestQuitPaths(t *testing.T) {
	post, get := "POST", "GET"
	for _, q := range []quitPath{
		{"envoy", Options{ExitCode: 7}, "admin", post, "/quitquitquit", nil, 200, 7, 0},
		{"osm", Options{}, "admin", post, "/quitquitquit", nil, 200, 0, 0},
		{"appmesh", Options{ExitCode: 2}, "admin", post, "/quitquitquit", nil, 200, 2, 0},
		{"kuma", Options{}, "admin", post, "/quitquitquit", nil, 200, 0, 0},
		{"istio", Options{ExitCode: 3}, "status", post, "/quitquitquit", nil, 200, 3, 0},
		{"istio", Options{}, "admin", post, "/quitquitquit", nil, 200, 0, 0},
		{"linkerd", Options{ExitCode: 4}, "admin", post, "/shutdown", nil, 200, 4, 0},
		{"consul", Options{}, "lifecycle", get, "/graceful_shutdown", nil, 200, 0, 0},
		{"consul", Options{ShutdownGracePeriod: 200 * time.Millisecond, ExitDelay: 100 * time.Millisecond}, "lifecycle", post, "/graceful_shutdown", nil, 200, 0, 300 * time.Millisecond},
		{"consul", Options{}, "admin", post, "/quitquitquit", nil, 200, 0, 0},
		{"dapr", Options{}, "http", post, "/v1.0/shutdown", nil, 204, 0, 0},
		{"dapr", Options{ExitCode: 5}, "http", post, "/v1.0/shutdown", []string{"dapr-force-shutdown", "true"}, 204, 1, daprForceExitDelay},
		{"dapr", Options{APIToken: "s3cret"}, "http", post, "/v1.0/shutdown", []string{"dapr-api-token", "s3cret"}, 204, 0, 0},
		{"cloudsql", Options{}, "admin", get, "/quitquitquit", nil, 200, 0, 0},
		{"cloudsql", Options{ExitCode: 6}, "admin", post, "/quitquitquit", nil, 200, 6, 0},
		{"vault", Options{}, "admin", post, "/agent/v1/quit", nil, 200, 0, 0},
	} {
		t.Run(q.profile+" "+q.method+" "+q.target, func(t *testing.T) { checkQuit(t, q) })
	}
}

func checkQuit(t *testing.T, q quitPath) {
	sc, rec := startProfile(t, q.profile, q.opts)
	res := send(t, q.method, "http://"+sc.AddrOf(q.listener)+q.target, q.header...)
	if res.status != q.status {
		t.Errorf("answer %d %q, want %d", res.status, res.body, q.status)
	}
	select {
	case <-sc.Quit():
	default:
		t.Error("Quit() not closed after the answer")
	}
	waitDone(t, sc)
	quit, exit := rec.wait(t, "quit"), rec.wait(t, "exit")
	if got := exit.Get("code"); got != itoa(q.code) || sc.ExitCode() != q.code {
		t.Errorf("exit code %s (ExitCode %d), want %d", got, sc.ExitCode(), q.code)
	}
	if d := exit.Time.Sub(quit.Time); d < q.minDelay {
		t.Errorf("exit %v after quit, want >= %v", d, q.minDelay)
	}
	if n := len(eventsNamed(rec, "quit")); n != 1 {
		t.Errorf("%d quit events", n)
	}
	for _, l := range mustProfile(t, q.profile).Listeners {
		if !refused(sc.AddrOf(l.Name)) {
			t.Errorf("listener %s still accepts after exit", l.Name)
		}
	}
}
