package emulator

import "testing"

// TestCloudSQLEndpoints checks ref §8 on both listeners.
func TestCloudSQLEndpoints(t *testing.T) {
	const health, admin = "http", "admin"
	checkEndpoints(t, "cloudsql", []endpoint{
		{state: "ready", listener: health, method: "GET", target: "/startup", status: 200, body: "ok", ctype: goTextType},
		{state: "ready", listener: health, method: "POST", target: "/startup", status: 200, body: "ok", ctype: goTextType},
		{state: "initializing", listener: health, method: "GET", target: "/startup", status: 503, body: "error", ctype: goTextType},
		{state: "starting", listener: health, method: "GET", target: "/startup", status: 503, body: "error", ctype: goTextType},
		{state: "ready", listener: health, method: "GET", target: "/readiness", status: 200, body: "ok", ctype: goTextType},
		{state: "initializing", listener: health, method: "PUT", target: "/readiness", status: 503, body: "proxy is not started", ctype: goTextType},
		{state: "starting", listener: health, method: "GET", target: "/readiness", status: 503, body: "proxy is not started", ctype: goTextType},
		{state: "ready", listener: health, method: "GET", target: "/liveness", status: 200, body: "ok", ctype: goTextType},
		{state: "starting", listener: health, method: "DELETE", target: "/liveness", status: 200, body: "ok", ctype: goTextType},
		{state: "ready", listener: health, method: "POST", target: "/quitquitquit", status: 404},
		{state: "ready", listener: admin, method: "GET", target: "/quitquitquit", status: 200, quits: true},
		{state: "ready", listener: admin, method: "POST", target: "/quitquitquit", status: 200, quits: true},
		{state: "starting", listener: admin, method: "POST", target: "/quitquitquit", status: 200, quits: true},
		{state: "ready", listener: admin, method: "PUT", target: "/quitquitquit", status: 400},
		{state: "ready", listener: admin, method: "DELETE", target: "/quitquitquit", status: 400},
		{state: "ready", listener: admin, method: "HEAD", target: "/quitquitquit", status: 400},
		{state: "ready", listener: admin, method: "GET", target: "/startup", status: 404},
	})
}

// TestCloudSQLQuitOneShot: a second /quitquitquit during the exit delay
// answers 200 again but the shutdown happens once (ref §8, sync.Once).
func TestCloudSQLQuitOneShot(t *testing.T) {
	sc, rec := startProfile(t, "cloudsql", Options{ExitDelay: guard})
	url := "http://" + sc.AddrOf("admin") + "/quitquitquit"
	if a, b := send(t, "GET", url), send(t, "POST", url); a.status != 200 || b.status != 200 {
		t.Errorf("quits = %d, %d", a.status, b.status)
	}
	if n := len(eventsNamed(rec, "quit")); n != 1 {
		t.Errorf("%d quit events:\n%s", n, rec.text())
	}
}

// TestCloudSQLPutDoesNotQuit: the 400 for a wrong method leaves the proxy
// running and ready.
func TestCloudSQLPutDoesNotQuit(t *testing.T) {
	sc, rec := startProfile(t, "cloudsql", Options{})
	if res := send(t, "PUT", "http://"+sc.AddrOf("admin")+"/quitquitquit"); res.status != 400 || res.body != "" {
		t.Errorf("PUT = %d %q", res.status, res.body)
	}
	if res := send(t, "GET", "http://"+sc.Addr()+"/readiness"); res.status != 200 || rec.has("quit") {
		t.Errorf("after PUT /readiness = %d; events:\n%s", res.status, rec.text())
	}
}
