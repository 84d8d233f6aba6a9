package sidecar

// The deadline of a Quit (QuitOptions.Timeout and NotStartedFor), on testing/synctest's fake
// clock: the sidecar is a fakeSidecar on net.Pipe, whose waits the fake clock advances, so that
// each bound is checked to the nanosecond and a run that minutes of real time would take (the
// bug these tests guard against) costs none.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sidesync/sidesync/internal/pod/httpc"
)

// fakeSidecar refuses connections until listensAt, then accepts each and either answers status
// or, when status is 0, reads the request and never answers.
type fakeSidecar struct {
	listensAt time.Time
	status    int

	mu          sync.Mutex
	lastRefusal time.Time
	refusals    int
	accepted    int
}

// String says what the sidecar saw, for failure messages.
func (f *fakeSidecar) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	last := "none"
	if f.refusals > 0 {
		last = "the last at " + f.lastRefusal.Format("15:04:05.000")
	}
	return fmt.Sprintf("%d connections refused, %s; %d accepted", f.refusals, last, f.accepted)
}

// dial is the quit's dialFunc.
func (f *fakeSidecar) dial(ctx context.Context, addr string) (net.Conn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if now := time.Now(); now.Before(f.listensAt) {
		f.refusals++
		f.lastRefusal = now
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	f.accepted++
	client, server := net.Pipe()
	go f.serve(server)
	return client, nil
}

func (f *fakeSidecar) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	if _, err := http.ReadRequest(br); err != nil {
		return
	}
	if f.status != 0 {
		fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Length: 0\r\n\r\n", f.status, http.StatusText(f.status))
		return
	}
	io.Copy(io.Discard, br) // no answer; it ends when the quit hangs up
}

// TestQuitDeadline: only refused connections extend a quit past Timeout, each to Timeout after
// the refusal and never past NotStartedFor + Timeout; a sidecar that accepts the connection and
// never answers holds the quit Timeout after the later of its start and the last refusal, however
// long NotStartedFor and RequestTimeout are. Each case fails on the code that put the whole call
// under Timeout + NotStartedFor.
func TestQuitDeadline(t *testing.T) {
	const timeout = time.Second
	tests := []struct {
		name          string
		listensAfter  time.Duration // from the start; 0: from the start
		status        int           // 0: never answers
		notStartedFor time.Duration
		backoff       Backoff
		// want is when the quit ends, from its start; wantAfterRefusal, when set, says that it
		// ends Timeout after the last refusal instead.
		want             time.Duration
		wantAfterRefusal bool
		wantErr          func(error) bool
	}{
		{
			name: "listening, never answers: Timeout, whatever NotStartedFor", status: 0, notStartedFor: 5 * time.Minute,
			want: timeout, wantErr: httpc.Timeout,
		},
		{
			name: "listening, answers 503: the pause before the retry ends at Timeout", status: 503, notStartedFor: 5 * time.Minute,
			backoff: Constant{10 * time.Second}, want: timeout, wantErr: isStatus(503),
		},
		{
			name: "listens late, never answers: Timeout after the last refusal", listensAfter: 30 * time.Second, notStartedFor: 5 * time.Minute,
			wantAfterRefusal: true, wantErr: httpc.Timeout,
		},
		{
			name: "listens late, answers 503: Timeout after the last refusal", listensAfter: 2 * time.Second, status: 503, notStartedFor: 5 * time.Minute,
			backoff: Constant{10 * time.Second}, wantAfterRefusal: true, wantErr: isStatus(503),
		},
		{
			name: "never listens: refusals never move the end past NotStartedFor + Timeout", listensAfter: time.Hour, notStartedFor: 3 * time.Second,
			backoff: Constant{time.Second}, want: 3*time.Second + timeout, wantErr: httpc.Refused,
		},
		{
			name: "never listens, no NotStartedFor: Timeout", listensAfter: time.Hour,
			backoff: Constant{300 * time.Millisecond}, want: timeout, wantErr: httpc.Refused,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				f := &fakeSidecar{listensAt: start.Add(tt.listensAfter), status: tt.status}
				o := QuitOptions{Timeout: timeout, RequestTimeout: time.Minute, NotStartedFor: tt.notStartedFor, Backoff: tt.backoff}
				_, err := quit(context.Background(), Call{URL: "http://127.0.0.1:15000/quitquitquit"}, o, f.dial)
				took := time.Since(start)
				want := tt.want
				if tt.wantAfterRefusal {
					if f.refusals == 0 {
						t.Fatal("the sidecar refused nothing")
					}
					want = f.lastRefusal.Sub(start) + timeout
				}
				if took != want {
					t.Errorf("Quit took %v, want %v (%s)", took, want, f)
				}
				var qe *QuitError
				if !errors.As(err, &qe) || !tt.wantErr(err) {
					t.Errorf("Quit: %v; want a *QuitError of the expected kind", err)
				}
			})
		})
	}
}

// isStatus is an error check for a *StatusError with code.
func isStatus(code int) func(error) bool {
	return func(err error) bool {
		var se *StatusError
		return errors.As(err, &se) && se.Code == code
	}
}

// TestEndOfQuit: the deadline rule itself, event by event.
func TestEndOfQuit(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := time.Second
	refused := &httpc.Error{Op: "dial", Err: syscall.ECONNREFUSED}
	dialTimeout := &httpc.Error{Op: "dial", Err: context.DeadlineExceeded}
	readTimeout := &httpc.Error{Op: "read", Sent: true, Err: context.DeadlineExceeded}
	writeReset := &httpc.Error{Op: "write", Err: syscall.ECONNRESET}
	type event struct {
		err error
		at  time.Duration // after t0
	}
	tests := []struct {
		name          string
		notStartedFor time.Duration
		events        []event
		want          time.Duration // the deadline, after t0
	}{
		{"nothing yet", 5 * s, nil, s},
		{"a refusal moves it", 5 * s, []event{{refused, 2 * s}}, 3 * s},
		{"a refusal before Timeout passes keeps the later end", 5 * s, []event{{refused, 2 * s}, {refused, s / 2}}, 3 * s},
		{"never past NotStartedFor + Timeout", 5 * s, []event{{refused, 10 * s}}, 6 * s},
		{"no NotStartedFor: no move", 0, []event{{refused, s / 2}}, s},
		{"an answer fixes it", 5 * s, []event{{nil, s / 2}, {refused, 2 * s}}, s},
		{"a request cut while read fixes it", 5 * s, []event{{refused, 2 * s}, {readTimeout, 3 * s}, {refused, 4 * s}}, 3 * s},
		{"a failed write fixes it", 5 * s, []event{{writeReset, s / 2}, {refused, 2 * s}}, s},
		{"a dial that timed out neither moves nor fixes it", 5 * s, []event{{dialTimeout, 2 * s}, {refused, 3 * s}}, 4 * s},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEndOfQuit(t0, s, tt.notStartedFor)
			for _, ev := range tt.events {
				e.saw(ev.err, t0.Add(ev.at))
			}
			if got := e.at.Sub(t0); got != tt.want {
				t.Errorf("deadline after %v, want after %v", got, tt.want)
			}
		})
	}
}
