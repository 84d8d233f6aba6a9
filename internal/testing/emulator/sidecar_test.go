package emulator

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"
)

// TestSidecarStateTransitions: PRE_INITIALIZING at start, INITIALIZING at
// half the ready delay, LIVE at the delay; every answer agrees with the
// state events written before it.
func TestSidecarStateTransitions(t *testing.T) {
	const delay = 300 * time.Millisecond
	sc, rec := startEnvoy(t, Options{ReadyAfter: delay})
	readyURL := "http://" + sc.Addr() + "/ready"
	early := call(t, "GET", readyURL)
	if early.body == "LIVE\n" && early.status != 200 || early.body != "LIVE\n" && early.status != 503 {
		t.Errorf("early /ready = %d %q", early.status, early.body)
	}
	if !rec.has("state", "state", early.body[:len(early.body)-1]) {
		t.Errorf("answer %q came before its state event:\n%s", early.body, rec.text())
	}
	pre := rec.wait(t, "state", "state", "PRE_INITIALIZING")
	initializing := rec.wait(t, "state", "state", "INITIALIZING")
	ready := rec.wait(t, "state", "state", "LIVE")
	if d := initializing.Time.Sub(pre.Time); d < delay/2 {
		t.Errorf("INITIALIZING %v after start, want >= %v", d, delay/2)
	}
	if d := ready.Time.Sub(pre.Time); d < delay {
		t.Errorf("LIVE %v after start, want >= %v", d, delay)
	}
	if res := call(t, "GET", readyURL); res.status != 200 || res.body != "LIVE\n" {
		t.Errorf("/ready after LIVE = %d %q", res.status, res.body)
	}
	if sc.State() != "LIVE" {
		t.Errorf("State() = %q", sc.State())
	}
}

func TestSidecarWaitState(t *testing.T) {
	sc, _ := startEnvoy(t, Options{ReadyAfter: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := sc.WaitState(ctx, "LIVE"); err != nil {
		t.Fatal(err)
	}
	never, _ := startEnvoy(t, Options{NeverReady: true})
	go never.Close()
	if err := never.WaitState(ctx, "LIVE"); err == nil {
		t.Error("WaitState on a never-ready sidecar that stopped succeeded")
	}
}

// TestSidecarReadyBehaviours: the knob governs /ready and /server_info
// only; the emulator stays up.
func TestSidecarReadyBehaviours(t *testing.T) {
	for _, b := range []Behaviour{BehaviourHang, BehaviourReset, BehaviourEOF, Behaviour404, Behaviour500} {
		for _, path := range []string{"/ready", "/server_info"} {
			t.Run(string(b)+path, func(t *testing.T) {
				sc, rec := startEnvoy(t, Options{ReadyBehaviour: b})
				base := "http://" + sc.Addr()
				res, err := try("GET", base+path, 300*time.Millisecond)
				checkBehaviour(t, b, res, err)
				rec.wait(t, "request", "path", path, "status", eventStatus(b))
				if res := call(t, "GET", base+"/help"); res.status != 200 {
					t.Errorf("/help after %s = %d", b, res.status)
				}
			})
		}
	}
}

// eventStatus is the status= value of a request event for behaviour b.
func eventStatus(b Behaviour) string {
	if b == BehaviourOK {
		return "200"
	}
	return string(b)
}

// checkBehaviour checks what a net/http client saw against behaviour b.
func checkBehaviour(t *testing.T, b Behaviour, res result, err error) {
	t.Helper()
	var ue *url.Error
	switch b {
	case BehaviourHang:
		if !errors.As(err, &ue) || !ue.Timeout() {
			t.Errorf("hang: %+v, %v; want a client timeout", res, err)
		}
	case BehaviourReset:
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("reset: %+v, %v; want ECONNRESET", res, err)
		}
	case BehaviourEOF:
		if !errors.Is(err, io.EOF) {
			t.Errorf("eof: %+v, %v; want EOF", res, err)
		}
	case Behaviour404:
		if err != nil || res.status != 404 || res.body != "not found\n" {
			t.Errorf("404: %+v, %v", res, err)
		}
	case Behaviour500:
		if err != nil || res.status != 500 || res.body != "internal error\n" {
			t.Errorf("500: %+v, %v", res, err)
		}
	}
}

// TestSidecarQuit: POST /quitquitquit answers 200 "OK\n" (ref §1.5), then
// the emulator stops with exit code 0 and the port stops accepting.
func TestSidecarQuit(t *testing.T) {
	sc, rec := startEnvoy(t, Options{})
	res := call(t, "POST", "http://"+sc.Addr()+"/quitquitquit")
	if res.status != 200 || res.body != "OK\n" {
		t.Errorf("quit = %d %q", res.status, res.body)
	}
	checkHeaders(t, res)
	select {
	case <-sc.Quit():
	default:
		t.Error("Quit() not closed after the answer")
	}
	waitDone(t, sc)
	quit := rec.wait(t, "quit")
	exit := rec.wait(t, "exit", "code", "0")
	if exit.Time.Before(quit.Time) || sc.ExitCode() != 0 {
		t.Errorf("exit code %d; events:\n%s", sc.ExitCode(), rec.text())
	}
	if !refused(sc.Addr()) {
		t.Error("port still accepts after exit")
	}
}

func checkHeaders(t *testing.T, res result) {
	t.Helper()
	checkEnvoyHeaders(t, res, textType)
}

// TestSidecarQuitBehaviours: hang and 500 keep the emulator up; reset and
// eof accept the quit and exit with the configured code.
func TestSidecarQuitBehaviours(t *testing.T) {
	for _, b := range []Behaviour{BehaviourHang, Behaviour500, BehaviourReset, BehaviourEOF} {
		t.Run(string(b), func(t *testing.T) {
			sc, rec := startEnvoy(t, Options{QuitBehaviour: b, ExitCode: 4})
			base := "http://" + sc.Addr()
			res, err := try("POST", base+"/quitquitquit", 300*time.Millisecond)
			checkBehaviour(t, b, res, err)
			rec.wait(t, "request", "path", "/quitquitquit", "status", eventStatus(b))
			if b == BehaviourHang || b == Behaviour500 {
				if rec.has("quit") || call(t, "GET", base+"/ready").status != 200 {
					t.Errorf("%s: emulator quit or stopped answering:\n%s", b, rec.text())
				}
				return
			}
			<-sc.Quit()
			waitDone(t, sc)
			if sc.ExitCode() != 4 || !rec.has("exit", "code", "4") || !refused(sc.Addr()) {
				t.Errorf("%s: exit code %d, refused %v; events:\n%s", b, sc.ExitCode(), refused(sc.Addr()), rec.text())
			}
		})
	}
}

// TestSidecarExitDelay: the listener stays open for the exit delay after
// the quit was answered, then the emulator exits with the exit code.
func TestSidecarExitDelay(t *testing.T) {
	const delay = time.Second
	sc, rec := startEnvoy(t, Options{ExitCode: 3, ExitDelay: delay})
	base := "http://" + sc.Addr()
	if res := call(t, "POST", base+"/quitquitquit"); res.status != 200 {
		t.Fatalf("quit = %d", res.status)
	}
	if res := call(t, "GET", base+"/ready"); res.status != 200 {
		t.Errorf("/ready during the exit delay = %d", res.status)
	}
	waitDone(t, sc)
	quit, exit := rec.wait(t, "quit"), rec.wait(t, "exit", "code", "3")
	if d := exit.Time.Sub(quit.Time); d < delay {
		t.Errorf("exit %v after quit, want >= %v", d, delay)
	}
	if sc.ExitCode() != 3 || !refused(sc.Addr()) {
		t.Errorf("exit code %d, refused %v", sc.ExitCode(), refused(sc.Addr()))
	}
}

// TestSidecarLateListen: the address is known at once but connections are
// refused until the listen delay has passed. A check that ends after the
// emulator started listening proves nothing, so a slow machine retries with a
// longer delay rather than failing.
func TestSidecarLateListen(t *testing.T) {
	for delay := 200 * time.Millisecond; ; delay *= 2 {
		sc, rec := startEnvoy(t, Options{ListenAfter: delay})
		wasRefused := refused(sc.Addr())
		if rec.has("listening") {
			if delay > 10*time.Second {
				t.Fatalf("the machine never checked within a %v listen delay", delay)
			}
			sc.Close()
			continue
		}
		if !wasRefused {
			t.Error("connection not refused before the listen delay")
		}
		addr := rec.wait(t, "address")
		listening := rec.wait(t, "listening", "addr", sc.Addr())
		if addr.Get("addr") != sc.Addr() || listening.Time.Sub(addr.Time) < delay {
			t.Errorf("events:\n%s", rec.text())
		}
		if res := call(t, "GET", "http://"+sc.Addr()+"/ready"); res.status != 200 || res.body != "LIVE\n" {
			t.Errorf("/ready after listening = %d %q", res.status, res.body)
		}
		return
	}
}

// TestSidecarCloseEndsHangingRequest: Close ends a hanging /ready and the
// emulator exits 0, as on SIGTERM.
func TestSidecarCloseEndsHangingRequest(t *testing.T) {
	sc, rec := startEnvoy(t, Options{ReadyBehaviour: BehaviourHang})
	c, err := net.Dial("tcp", sc.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(guard))
	io.WriteString(c, "GET /ready HTTP/1.1\r\nHost: x\r\n\r\n")
	rec.wait(t, "request", "path", "/ready", "status", "hang")
	sc.Close()
	if got, err := io.ReadAll(c); err != nil || len(got) != 0 {
		t.Errorf("after Close: %q, %v; want EOF", got, err)
	}
	if sc.ExitCode() != 0 || !rec.has("exit", "code", "0") {
		t.Errorf("exit code %d; events:\n%s", sc.ExitCode(), rec.text())
	}
}

func TestSidecarStopsWhenContextEnds(t *testing.T) {
	rec := newRecorder()
	sc := NewEnvoy(Options{Events: rec})
	ctx, cancel := context.WithCancel(context.Background())
	if err := sc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	waitDone(t, sc)
	if sc.ExitCode() != 0 || !rec.has("exit", "code", "0") || !refused(sc.Addr()) {
		t.Errorf("exit code %d; events:\n%s", sc.ExitCode(), rec.text())
	}
}

func TestSidecarStartErrors(t *testing.T) {
	bad := NewEnvoy(Options{ReadyBehaviour: "sideways"})
	if err := bad.Start(context.Background()); err == nil {
		t.Error("Start with a bad behaviour succeeded")
	}
	waitDone(t, bad)
	if bad.ExitCode() != 1 {
		t.Errorf("exit code after a failed Start = %d", bad.ExitCode())
	}
	sc, _ := startEnvoy(t, Options{})
	if err := sc.Start(context.Background()); err == nil {
		t.Error("second Start succeeded")
	}
}
