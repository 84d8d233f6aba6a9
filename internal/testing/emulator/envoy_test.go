package emulator

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	textType = "text/plain; charset=UTF-8"
	helpHead = "invalid path. admin commands are:\n"
)

// Option sets for the states the tests need, each deterministic: LIVE at
// once, INITIALIZING forever, PRE_INITIALIZING for an hour.
func optsFor(state string) Options {
	switch state {
	case "INITIALIZING":
		return Options{NeverReady: true}
	case "PRE_INITIALIZING":
		return Options{ReadyAfter: time.Hour}
	}
	return Options{}
}

// TestEnvoyEndpoints checks exact status, body and content type of the
// endpoints of ref §1, each on a fresh emulator, through net/http.
func TestEnvoyEndpoints(t *testing.T) {
	for _, tc := range []struct {
		name           string
		state          string
		method, target string
		status         int
		body           string // exact, or a prefix when prefix is set
		prefix         bool
		ctype          string
	}{
		{"ready live", "LIVE", "GET", "/ready", 200, "LIVE\n", false, textType},
		{"ready POST", "LIVE", "POST", "/ready", 200, "LIVE\n", false, textType},
		{"ready HEAD", "LIVE", "HEAD", "/ready", 200, "", false, textType},
		{"ready query", "LIVE", "GET", "/ready?foo=bar", 200, "LIVE\n", false, textType},
		{"ready initializing", "INITIALIZING", "GET", "/ready", 503, "INITIALIZING\n", false, textType},
		{"ready pre-initializing", "PRE_INITIALIZING", "GET", "/ready", 503, "PRE_INITIALIZING\n", false, textType},
		{"ready HEAD initializing", "INITIALIZING", "HEAD", "/ready", 503, "", false, textType},
		{"readyx", "LIVE", "GET", "/readyx", 404, helpHead, true, textType},
		{"ready slash", "LIVE", "GET", "/ready/", 404, helpHead, true, textType},
		{"unknown", "LIVE", "GET", "/nope?x", 404, helpHead, true, textType},
		{"quit GET", "LIVE", "GET", "/quitquitquit", 405, "Method GET not allowed, POST required.", false, textType},
		{"quit PUT", "LIVE", "PUT", "/quitquitquit", 405, "Method PUT not allowed, POST required.", false, textType},
		{"quit lowercase post", "LIVE", "post", "/quitquitquit", 405, "Method post not allowed, POST required.", false, textType},
		{"quit HEAD", "LIVE", "HEAD", "/quitquitquit", 405, "", false, textType},
		{"hc fail GET", "LIVE", "GET", "/healthcheck/fail", 405, "Method GET not allowed, POST required.", false, textType},
		{"hc ok GET", "LIVE", "GET", "/healthcheck/ok", 405, "Method GET not allowed, POST required.", false, textType},
		{"drain GET", "LIVE", "GET", "/drain_listeners", 405, "Method GET not allowed, POST required.", false, textType},
		{"hc fail POST", "LIVE", "POST", "/healthcheck/fail", 200, "OK\n", false, textType},
		{"hc ok POST", "LIVE", "POST", "/healthcheck/ok", 200, "OK\n", false, textType},
		{"drain POST", "LIVE", "POST", "/drain_listeners?graceful&skip_exit", 200, "OK\n", false, textType},
		{"server_info", "LIVE", "GET", "/server_info", 200, "{\n \"version\": ", true, jsonType},
		{"server_info initializing", "INITIALIZING", "POST", "/server_info", 200, "{\n", true, jsonType},
		{"help", "LIVE", "GET", "/help", 200, "admin commands are:\n", true, textType},
		{"hot restart version", "LIVE", "GET", "/hot_restart_version", 200, "11.104", false, textType},
		{"stats filter", "LIVE", "GET", "/stats?filter=^server%5C.state$", 200, "server.state: 0\n", false, textType},
		{"stats initializing", "INITIALIZING", "GET", "/stats?filter=state", 200, "server.state: 3\n", false, textType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, _ := startEnvoy(t, optsFor(tc.state))
			res := call(t, tc.method, "http://"+sc.Addr()+tc.target)
			bodyOK := res.body == tc.body || (tc.prefix && strings.HasPrefix(res.body, tc.body))
			if res.status != tc.status || !bodyOK {
				t.Errorf("%s %s = %d %q, want %d %q", tc.method, tc.target, res.status, res.body, tc.status, tc.body)
			}
			checkEnvoyHeaders(t, res, tc.ctype)
		})
	}
}

// checkEnvoyHeaders checks the admin headers of ref §1.1.
func checkEnvoyHeaders(t *testing.T, res result, ctype string) {
	t.Helper()
	if got := res.header.Get("Content-Type"); got != ctype {
		t.Errorf("content-type = %q, want %q", got, ctype)
	}
	if got := res.header.Get("Cache-Control"); got != "no-cache, max-age=0" {
		t.Errorf("cache-control = %q", got)
	}
	if got := res.header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("x-content-type-options = %q", got)
	}
}

// TestEnvoyMethodRules walks the whole handler table: mutating endpoints
// refuse every method but POST with 405, the others take any method.
func TestEnvoyMethodRules(t *testing.T) {
	sc, rec := startEnvoy(t, Options{})
	for _, rt := range sc.binding.Muxes[adminListener].Routes {
		mutating := slices.Equal(rt.Methods, []string{"POST"})
		for _, method := range []string{"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "POST"} {
			if rt.Path == "/quitquitquit" && method == "POST" {
				continue // shuts down; see TestEnvoyQuit
			}
			res := call(t, method, "http://"+sc.Addr()+rt.Path)
			switch {
			case mutating && method != "POST":
				want := "Method " + method + " not allowed, POST required."
				if method == "HEAD" {
					want = ""
				}
				if res.status != 405 || res.body != want {
					t.Errorf("%s %s = %d %q, want 405 %q", method, rt.Path, res.status, res.body, want)
				}
			case res.status == 404 || res.status == 405:
				t.Errorf("%s %s = %d %q", method, rt.Path, res.status, res.body)
			}
		}
	}
	if rec.has("quit") {
		t.Error("a request other than POST /quitquitquit was taken as a quit")
	}
}

func TestEnvoyNotFoundListsHelp(t *testing.T) {
	sc, _ := startEnvoy(t, Options{})
	help := call(t, "GET", "http://"+sc.Addr()+"/help").body
	res := call(t, "GET", "http://"+sc.Addr()+"/readyx")
	if res.status != 404 || res.body != "invalid path. "+help {
		t.Errorf("404 body = %q, want \"invalid path. \" + help", res.body)
	}
	lines := strings.Split(strings.TrimSuffix(help, "\n"), "\n")
	if len(lines) != len(sc.binding.Muxes[adminListener].Routes)+1 {
		t.Errorf("help has %d lines for %d routes", len(lines), len(sc.binding.Muxes[adminListener].Routes))
	}
	var paths []string
	for _, l := range lines[1:] {
		path, _, _ := strings.Cut(strings.TrimPrefix(l, "  "), ":")
		paths = append(paths, strings.TrimSuffix(path, " (POST)"))
	}
	if !slices.IsSorted(paths) {
		t.Errorf("help lines are not sorted by path:\n%s", help)
	}
	for _, want := range []string{
		"  /quitquitquit (POST): exit the server",
		"  /healthcheck/fail (POST): cause the server to fail health checks",
		"  /ready: print server state, return 200 if LIVE, otherwise return 503",
		"  /server_info: print server version/status information",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("help lacks line %q", want)
		}
	}
}

// serverInfo fetches and decodes /server_info.
func serverInfo(t *testing.T, addr string) (map[string]any, string) {
	t.Helper()
	res := call(t, "GET", "http://"+addr+"/server_info")
	var info map[string]any
	if err := json.Unmarshal([]byte(res.body), &info); err != nil || res.status != 200 {
		t.Fatalf("/server_info = %d %q: %v", res.status, res.body, err)
	}
	return info, res.body
}

func TestEnvoyServerInfo(t *testing.T) {
	for _, state := range []string{"LIVE", "INITIALIZING", "PRE_INITIALIZING"} {
		sc, _ := startEnvoy(t, optsFor(state))
		info, body := serverInfo(t, sc.Addr())
		if info["state"] != state || !strings.Contains(body, "\n \"state\": \""+state+"\",\n") {
			t.Errorf("state = %v in %s, want %s pretty-printed", info["state"], body, state)
		}
		for _, key := range []string{"version", "hot_restart_version", "uptime_current_epoch", "uptime_all_epochs", "node", "command_line_options"} {
			if _, ok := info[key]; !ok {
				t.Errorf("server_info lacks %q", key)
			}
		}
		opts, _ := info["command_line_options"].(map[string]any)
		if opts["drain_time"] != "600s" || opts["parent_shutdown_time"] != "900s" {
			t.Errorf("command_line_options = %v", opts)
		}
	}
}

// TestEnvoyHealthcheck: /healthcheck/fail turns LIVE into DRAINING and
// /healthcheck/ok back (ref §1.3, §1.6).
func TestEnvoyHealthcheck(t *testing.T) {
	sc, rec := startEnvoy(t, Options{})
	base := "http://" + sc.Addr()
	if res := call(t, "POST", base+"/healthcheck/fail"); res.status != 200 || res.body != "OK\n" {
		t.Errorf("fail = %d %q", res.status, res.body)
	}
	rec.wait(t, "state", "state", "DRAINING")
	if res := call(t, "GET", base+"/ready"); res.status != 503 || res.body != "DRAINING\n" {
		t.Errorf("ready while draining = %d %q", res.status, res.body)
	}
	if info, _ := serverInfo(t, sc.Addr()); info["state"] != "DRAINING" {
		t.Errorf("server_info state = %v", info["state"])
	}
	if res := call(t, "GET", base+"/stats?filter=server.state"); res.body != "server.state: 1\n" {
		t.Errorf("stats while draining = %q", res.body)
	}
	if res := call(t, "POST", base+"/healthcheck/ok"); res.status != 200 || res.body != "OK\n" {
		t.Errorf("ok = %d %q", res.status, res.body)
	}
	if res := call(t, "GET", base+"/ready"); res.status != 200 || res.body != "LIVE\n" {
		t.Errorf("ready after ok = %d %q", res.status, res.body)
	}
	if n := len(eventsNamed(rec, "state")); n != 5 {
		t.Errorf("got %d state events, want PRE_INITIALIZING INITIALIZING LIVE DRAINING LIVE:\n%s", n, rec.text())
	}
}

// TestEnvoyHealthcheckFailBeforeInit: the flag shows only once
// initialized (Utility::serverState, ref §1.3).
func TestEnvoyHealthcheckFailBeforeInit(t *testing.T) {
	sc, rec := startEnvoy(t, optsFor("PRE_INITIALIZING"))
	call(t, "POST", "http://"+sc.Addr()+"/healthcheck/fail")
	if res := call(t, "GET", "http://"+sc.Addr()+"/ready"); res.status != 503 || res.body != "PRE_INITIALIZING\n" {
		t.Errorf("ready = %d %q", res.status, res.body)
	}
	if rec.has("state", "state", "DRAINING") {
		t.Error("DRAINING before initialization")
	}
}

func eventsNamed(rec *recorder, name string) []Event {
	evs, _ := rec.snapshot()
	var out []Event
	for _, ev := range evs {
		if ev.Name == name {
			out = append(out, ev)
		}
	}
	return out
}
