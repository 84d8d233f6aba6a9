package sidecar_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sidesync/sidesync/sidecar"
)

// The article's job: wait until Envoy is LIVE, do the work, tell Envoy to quit.
func Example() {
	envoy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ready":
			fmt.Fprint(w, "LIVE\n")
		case "/quitquitquit":
			fmt.Fprint(w, "OK\n")
		}
	}))
	defer envoy.Close()
	admin := envoy.URL // in a pod: http://127.0.0.1:15000

	ctx := context.Background()
	if _, err := sidecar.WaitReady(ctx, sidecar.Check{Kind: sidecar.EnvoyAdmin, URL: admin}, sidecar.WaitOptions{Timeout: time.Minute}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("doing the work")
	res, err := sidecar.Quit(ctx, sidecar.EnvoyQuit(admin), sidecar.QuitOptions{})
	fmt.Println(res.StatusCode, res.Body, err)
	// Output:
	// doing the work
	// 200 OK <nil>
}

// A wait that gives up says why and what the sidecar last answered.
func ExampleWaitReady_timeout() {
	starting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, "INITIALIZING\n")
	}))
	defer starting.Close()

	check := sidecar.Check{Kind: sidecar.EnvoyAdmin, URL: starting.URL}
	_, err := sidecar.WaitReady(context.Background(), check, sidecar.WaitOptions{Timeout: 100 * time.Millisecond})
	var we *sidecar.WaitError
	if errors.As(err, &we) {
		fmt.Println("timed out:", errors.Is(err, sidecar.ErrTimeout))
		fmt.Println("last probe:", we.Last)
	}
	// Output:
	// timed out: true
	// last probe: 503 Service Unavailable: INITIALIZING
}

// The article's policy: DecorrelatedJitterBackoffV2(medianFirstRetryDelay: 1s, retryCount: 5).
// With every random sample at 0.5 the delays are the reference's test vector.
func ExamplePolly() {
	half := func() float64 { return 0.5 }
	for d := range sidecar.Polly(time.Second, 5, false).Delays(half) {
		fmt.Println(d)
	}
	// Output:
	// 897.4049ms
	// 1.0930035s
	// 2.0357479s
	// 4.0459794s
	// 8.0836316s
}

// A retry limit and a per-delay cap compose as wrappers.
func ExampleLimit() {
	b := sidecar.Limit(sidecar.Cap(sidecar.Exponential{Initial: 100 * time.Millisecond}, 300*time.Millisecond), 4)
	for d := range b.Delays(nil) {
		fmt.Println(d)
	}
	// Output:
	// 100ms
	// 200ms
	// 300ms
	// 300ms
}
