package sidecar

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sidesync/sidesync/internal/pod/httpc"
	"github.com/sidesync/sidesync/internal/pod/logfmt"
)

// Defaults of WaitOptions.
const (
	// DefaultInterval is the delay between probes of the default policy, Constant{20ms}. A
	// sidecar that turns ready is then noticed 10 ms later on average and 20 ms at worst, at 50
	// probes per second: each probe is one request on a kept loopback connection, which costs a
	// sidecar far less than a request it serves. Growing backoffs (scuttle's grows to 60 s,
	// Polly's doubles) make the job start seconds after its proxy is ready, on every run of
	// every Job.
	DefaultInterval = 20 * time.Millisecond
	// DefaultProbeTimeout bounds one probe. A loopback admin endpoint answers in well under a
	// millisecond; one that takes a second is hung, and the next probe should try again.
	DefaultProbeTimeout = time.Second
)

// Reasons a wait stops without the sidecar being ready; see WaitError.Reason.
var (
	ErrTimeout          = errors.New("timed out")
	ErrRetriesExhausted = errors.New("no retries left")
)

// WaitOptions tunes WaitReady. The zero value probes every 20 ms, each probe bounded by 1 s, with
// no overall limit but ctx: set Timeout, a Limit on the Backoff, or a deadline on ctx.
type WaitOptions struct {
	Backoff      Backoff        // delays between probes; nil means Constant{DefaultInterval}
	Timeout      time.Duration  // overall limit; zero means none (ctx still applies)
	ProbeTimeout time.Duration  // limit of one probe; zero means DefaultProbeTimeout
	Rand         func() float64 // uniform [0, 1) samples for jittered backoffs; nil means math/rand/v2
	Logger       *slog.Logger   // nil means no logs
}

// WaitResult describes a wait that ended.
type WaitResult struct {
	Probes int           // how many probes were sent
	Waited time.Duration // from the call to the verdict
	Last   ProbeResult   // the last probe that gave a verdict
}

// WaitError is returned when the sidecar did not become ready. It keeps both why the wait
// stopped and what the sidecar last answered, so that a log line can say "timed out after 2m;
// last probe: 503 Service Unavailable: INITIALIZING".
type WaitError struct {
	Reason error // ErrTimeout, ErrRetriesExhausted, or the cause of ctx (a signal, say)
	Last   error // the last probe's error; nil if no probe got a verdict
	Probes int
	Waited time.Duration
}

func (e *WaitError) Error() string {
	s := fmt.Sprintf("sidecar not ready after %v (%d probes): %v", logfmt.Round(e.Waited), e.Probes, e.Reason)
	if e.Last != nil {
		s += "; last probe: " + e.Last.Error()
	}
	return s
}

// Unwrap lets errors.Is and errors.As see both the reason and the last probe's error.
func (e *WaitError) Unwrap() []error {
	if e.Last == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Last}
}

// WaitReady probes c until the sidecar is ready, the backoff has no retries left, Timeout
// passes or ctx is done. The first probe is sent at once. It returns a *WaitError when the
// sidecar did not become ready.
func WaitReady(ctx context.Context, c Check, o WaitOptions) (WaitResult, error) {
	start := time.Now()
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.Timeout, ErrTimeout)
		defer cancel()
	}
	w := newWaiter(c, o)
	defer w.close()
	if w.probe(ctx) {
		return w.result(start), nil
	}
	backoff := o.Backoff
	if backoff == nil {
		backoff = Constant{DefaultInterval}
	}
	for d := range backoff.Delays(o.Rand) {
		if !w.sleep(ctx, d) {
			break
		}
		if w.probe(ctx) {
			return w.result(start), nil
		}
	}
	reason := ErrRetriesExhausted
	if ctx.Err() != nil {
		reason = context.Cause(ctx)
	}
	res := w.result(start)
	return res, &WaitError{Reason: reason, Last: res.Last.Err, Probes: res.Probes, Waited: res.Waited}
}

// waiter is the state of one WaitReady call. A probe that gets the same answer as the previous
// one allocates nothing (see prober): the memory of a waiting sidesync does not grow with the
// length of the wait.
type waiter struct {
	*prober
	log    *slog.Logger
	probes int
	last   ProbeResult
	seen   bool        // last holds a verdict
	kind   answerKind  // the kind of the last "not ready" answer, to log changes only
	timer  *time.Timer // sleeps between probes; one for the whole wait
}

// newWaiter prepares a wait for c; close it when done.
func newWaiter(c Check, o WaitOptions) *waiter {
	timeout := o.ProbeTimeout
	if timeout <= 0 {
		timeout = DefaultProbeTimeout
	}
	return &waiter{prober: newProber(c, timeout), log: loggerOrDiscard(o.Logger)}
}

// close ends the wait: it closes the connection to the sidecar and stops the timer.
func (w *waiter) close() {
	w.prober.close()
	if w.timer != nil {
		w.timer.Stop()
	}
}

// probe sends one probe and reports whether the sidecar is ready. Each request of the probe is
// bounded by the probe timeout through its connection's deadline, not a context of its own,
// which would cost allocations on every probe; the end of ctx still cuts it short at once.
func (w *waiter) probe(ctx context.Context) bool {
	r := w.prober.probe(ctx)
	w.probes++
	if !r.Ready && ended(ctx) && w.seen {
		return false // cut short by the end of the wait: keep the previous verdict
	}
	w.last, w.seen = r, true
	// Checked first: the arguments, boxed into interfaces, would allocate even when discarded.
	if w.log.Enabled(context.Background(), slog.LevelDebug) {
		w.log.Debug("probe", "url", r.URL, "ready", r.Ready, "status", r.StatusCode, "took", r.Took, "err", r.Err)
	}
	if !r.Ready {
		w.logChange(r)
	}
	return r.Ready
}

// sleep is sleep with the waiter's one timer, rather than a new one per delay.
func (w *waiter) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d) // since Go 1.23, Reset leaves no stale tick in C to drain
	}
	select {
	case <-w.timer.C:
		return true
	case <-ctx.Done():
		w.timer.Stop()
		return false
	}
}

// logChange logs a "not ready" answer when it differs in kind from the previous one, so that a
// long wait shows "connection refused", then "503 INITIALIZING", without a line per probe.
func (w *waiter) logChange(r ProbeResult) {
	kind := classify(r)
	if kind == w.kind {
		return
	}
	w.kind = kind
	level := slog.LevelInfo
	if r.StatusCode >= 400 && r.StatusCode < 500 {
		level = slog.LevelWarn // 404, 403: probably the wrong URL or port
	}
	w.log.Log(context.Background(), level, "sidecar not ready yet", "url", r.URL, "reason", r.Err.Error())
}

// answerKind is the kind of a "not ready" answer: its status and body, or why none came.
type answerKind struct {
	status int
	body   string
	failed string // "refused", "timeout" or "error" when no answer came
}

// classify names the kind of a "not ready" answer. It allocates nothing for an answer.
func classify(r ProbeResult) answerKind {
	switch {
	case r.StatusCode != 0:
		return answerKind{status: r.StatusCode, body: r.Body}
	case httpc.Refused(r.Err):
		return answerKind{failed: "refused"}
	case httpc.Timeout(r.Err):
		return answerKind{failed: "timeout"}
	default:
		return answerKind{failed: "error"}
	}
}

func (w *waiter) result(start time.Time) WaitResult {
	return WaitResult{Probes: w.probes, Waited: time.Since(start), Last: w.last}
}

// ended reports whether ctx is done or past its deadline: a socket deadline can fire a moment
// before the context's own timer does.
func ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// sleep waits d or until ctx is done, and reports whether it slept the whole d.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func loggerOrDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
