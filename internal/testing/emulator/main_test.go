package emulator

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMainFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in stderr
	}{
		{nil, "usage"},
		{[]string{"istio-nope"}, `unknown profile "istio-nope"`},
		{[]string{"envoy", "--bogus"}, "bogus"},
		{[]string{"envoy", "--ready-after", "soon"}, "ready-after"},
		{[]string{"envoy", "--ready-after", "-1s"}, "ready-after"},
		{[]string{"envoy", "--listen-after", "x"}, "listen-after"},
		{[]string{"envoy", "--exit-delay", "-5ms"}, "exit-delay"},
		{[]string{"envoy", "--exit-code", "x"}, "exit-code"},
		{[]string{"envoy", "--exit-code", "256"}, "exit-code"},
		{[]string{"envoy", "--never-ready=maybe"}, "never-ready"},
		{[]string{"envoy", "--ready-behaviour", "sideways"}, "ready-behaviour"},
		{[]string{"envoy", "--quit-behaviour", "418"}, "quit-behaviour"},
		{[]string{"envoy", "--slow-by", "-1s"}, "slow-by"},
		{[]string{"envoy", "--listen"}, "listen"},
		{[]string{"envoy", "extra"}, `unexpected argument "extra"`},
		{[]string{"envoy", "--listen", "status=127.0.0.1:0"}, `-listen: profile envoy has no listener "status"`},
		{[]string{"envoy", "--shutdown-disabled"}, "shutdown-disabled"},
		{[]string{"linkerd", "--app-channel"}, "app-channel"},
		{[]string{"vault", "--quit-disabled=maybe"}, "quit-disabled"},
		{[]string{"consul", "--shutdown-grace-period", "-1s"}, "shutdown-grace-period"},
		{[]string{"consul", "--startup-grace-period", "soon"}, "startup-grace-period"},
		{[]string{"dapr", "--api-token"}, "api-token"},
		{[]string{"nope"}, "profiles: envoy, osm, appmesh, kuma, istio, linkerd, consul, dapr, cloudsql, vault"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Main(tc.args, &stdout, &stderr); code != 2 {
			t.Errorf("Main(%q) = %d, want 2", tc.args, code)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("Main(%q) stderr = %q, want it to name %q", tc.args, stderr.String(), tc.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("Main(%q) wrote events %q", tc.args, stdout.String())
		}
	}
}

// TestMainProfileHelp: each profile's usage lists the shared flags, its
// own flags and its listeners.
func TestMainProfileHelp(t *testing.T) {
	own := map[string][]string{
		"linkerd": {"-shutdown-disabled"},
		"consul":  {"-shutdown-grace-period", "-startup-grace-period"},
		"dapr":    {"-app-channel", "-api-token"},
		"vault":   {"-quit-disabled"},
	}
	for _, p := range Profiles() {
		var stdout, stderr bytes.Buffer
		if code := Main([]string{p.Name, "-h"}, &stdout, &stderr); code != 0 {
			t.Errorf("%s -h exit code %d", p.Name, code)
		}
		want := append([]string{"-listen", "-ready-after", "-quit-behaviour", "-exit-code"}, own[p.Name]...)
		for _, l := range p.Listeners {
			want = append(want, "  "+l.Name+": ")
		}
		for _, w := range want {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("%s usage lacks %q:\n%s", p.Name, w, stderr.String())
			}
		}
	}
}

// TestMainProfileFlags: the profile flags reach Options.
func TestMainProfileFlags(t *testing.T) {
	for _, tc := range []struct {
		profile string
		args    []string
		check   func(o Options) bool
	}{
		{"linkerd", []string{"--shutdown-disabled"}, func(o Options) bool { return o.ShutdownDisabled }},
		{"vault", []string{"--quit-disabled"}, func(o Options) bool { return o.ShutdownDisabled }},
		{"consul", []string{"--shutdown-grace-period", "2s", "--startup-grace-period", "3s"}, func(o Options) bool {
			return o.ShutdownGracePeriod == 2*time.Second && o.StartupGracePeriod == 3*time.Second
		}},
		{"dapr", []string{"--app-channel", "--api-token", "tok"}, func(o Options) bool { return o.AppChannel && o.APIToken == "tok" }},
	} {
		opts, _, ok := parseFlags(mustProfile(t, tc.profile), tc.args, new(bytes.Buffer))
		if !ok || !tc.check(opts) {
			t.Errorf("%s %q: %+v, %v", tc.profile, tc.args, opts, ok)
		}
	}
}

func TestMainHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"envoy", "-h"}, &stdout, &stderr); code != 0 {
		t.Errorf("-h exit code %d", code)
	}
	for _, flag := range []string{"-listen", "-ready-after", "-never-ready", "-listen-after", "-ready-behaviour", "-quit-behaviour", "-exit-code", "-exit-delay"} {
		if !strings.Contains(stderr.String(), flag) {
			t.Errorf("usage lacks %s:\n%s", flag, stderr.String())
		}
	}
}

// startMain runs the envoy program in the background and returns its exit
// code channel and event recorder once it listens.
func startMain(t *testing.T, args ...string) (<-chan int, *recorder, string) {
	t.Helper()
	return startMainProfile(t, "envoy", args...)
}

// startMainProfile runs Main for profile in the background and returns
// its exit code channel, its event recorder and the main listener's
// address once the main listener listens.
func startMainProfile(t *testing.T, profile string, args ...string) (<-chan int, *recorder, string) {
	t.Helper()
	rec := newRecorder()
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() { code <- Main(append([]string{profile}, args...), rec, &stderr) }()
	main := mustProfile(t, profile).Listeners[0].Name
	addr := rec.wait(t, "listening", "name", main).Get("addr")
	return code, rec, addr
}

func waitCode(t *testing.T, code <-chan int) int {
	t.Helper()
	select {
	case c := <-code:
		return c
	case <-time.After(guard):
		t.Fatal("Main did not return")
	}
	return -1
}

// TestMainQuit runs the program: it answers the quit, writes the quit and
// exit events, returns the exit code and stops accepting.
func TestMainQuit(t *testing.T) {
	code, rec, addr := startMain(t, "--exit-code", "7")
	call(t, "GET", "http://"+addr+"/ready?x=1")
	res := call(t, "POST", "http://"+addr+"/quitquitquit")
	if res.status != 200 || res.body != "OK\n" {
		t.Errorf("quit = %d %q", res.status, res.body)
	}
	if c := waitCode(t, code); c != 7 {
		t.Errorf("Main returned %d, want 7", c)
	}
	if !refused(addr) {
		t.Error("port still accepts after Main returned")
	}
	evs, _ := rec.snapshot()
	var names []string
	for _, ev := range evs {
		names = append(names, ev.Name)
	}
	want := "address state state state listening request quit request exit"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("events %q, want %q:\n%s", got, want, rec.text())
	}
	checkEventLines(t, rec)
	if !matches(evs[0], "address", "name", "admin", "addr", addr) ||
		!matches(evs[5], "request", "method", "GET", "path", "/ready", "status", "200", "listener", "admin") ||
		!matches(evs[7], "request", "method", "POST", "path", "/quitquitquit", "status", "200") ||
		!strings.HasPrefix(evs[7].Get("peer"), "127.0.0.1:") || !matches(evs[8], "exit", "code", "7") {
		t.Errorf("event fields:\n%s", rec.text())
	}
}

// checkEventLines checks every line against the format and the t= order.
func checkEventLines(t *testing.T, rec *recorder) {
	t.Helper()
	if len(rec.bad) > 0 {
		t.Errorf("unparsable event lines: %q", rec.bad)
	}
	// The documented format: <event> key=value ... t=<unix nanoseconds>.
	eventLine := regexp.MustCompile(`^[a-z]+( [a-z_]+=[^ =]\S*)* t=[0-9]+$`)
	var last time.Time
	for _, line := range strings.Split(rec.text(), "\n") {
		if !eventLine.MatchString(line) {
			t.Errorf("event line %q does not match %v", line, eventLine)
		}
		ev, _ := ParseEvent(line)
		if ev.Time.Before(last) {
			t.Errorf("t= went backwards at %q", line)
		}
		last = ev.Time
	}
}

func TestMainStopsOnSIGTERM(t *testing.T) {
	code, rec, _ := startMain(t, "--ready-behaviour", "hang")
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if c := waitCode(t, code); c != 0 {
		t.Errorf("Main returned %d after SIGTERM, want 0", c)
	}
	if !rec.has("exit", "code", "0") || rec.has("quit") {
		t.Errorf("events:\n%s", rec.text())
	}
}

func TestMainListenFailure(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"envoy", "--listen", "127.0.0.1:99999"}, &stdout, &stderr); code != 1 {
		t.Errorf("Main = %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "99999") || !strings.HasPrefix(stdout.String(), "exit code=1 t=") {
		t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
}

func TestParseEvent(t *testing.T) {
	ev, err := ParseEvent("request method=GET path=/a%20b status=200 peer=127.0.0.1:5 t=1700000000000000001\n")
	if err != nil || ev.Name != "request" || ev.Get("path") != "/a%20b" || ev.Time.UnixNano() != 1700000000000000001 {
		t.Errorf("ParseEvent = %+v, %v", ev, err)
	}
	for _, bad := range []string{"", "quit", "quit t=x", "quit a t=1", "quit t=1 a=b"} {
		if _, err := ParseEvent(bad); err == nil {
			t.Errorf("ParseEvent(%q) succeeded", bad)
		}
	}
	if got := escapeValue("a b\n\x7f"); got != "a%20b%0A%7F" {
		t.Errorf("escapeValue = %q", got)
	}
	if got := escapeValue(""); got != "-" {
		t.Errorf("escapeValue(\"\") = %q", got)
	}
}
