package sidecar

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"syscall"
	"time"

	"github.com/sidesync/sidesync/internal/pod/httpc"
	"github.com/sidesync/sidesync/internal/pod/logfmt"
)

// Defaults of QuitOptions.
const (
	// DefaultQuitRequestTimeout bounds one quit request.
	DefaultQuitRequestTimeout = 2 * time.Second
	// DefaultQuitTimeout bounds a whole Quit, retries included, so that a pod never lingers
	// because a sidecar does not answer (scuttle could wait forever here: its issue 50).
	DefaultQuitTimeout = 10 * time.Second
	// DefaultQuitRetries is how many times DefaultQuitBackoff retries a failed quit request.
	DefaultQuitRetries = 3
)

// Call describes the request that asks a sidecar to quit.
type Call struct {
	URL    string // http:// URL, e.g. http://127.0.0.1:15000/quitquitquit
	Method string // empty means POST, which every sidecar accepts (Envoy answers 405 to GET)
	Header []Header
	// Alternates are tried in order when URL refuses the connection (nothing listens there):
	// for example Envoy's own admin when Istio's agent port is absent.
	Alternates []string
	// Hints explain known failures in the sidecar's terms (Linkerd's disabled /shutdown, say).
	Hints []Hint
}

// EnvoyQuit returns the call that asks the Envoy whose admin base URL is admin to quit,
// POST <admin>/quitquitquit (docs/SIDECARS.md 1.5). Istio's agent takes the same call on its
// own port (3.3).
func EnvoyQuit(admin string) Call { return Call{URL: joinPath(admin, "quitquitquit")} }

// QuitOptions tunes Quit. The zero value makes up to 4 attempts 100 ms, 200 ms and 400 ms apart,
// each bounded by 2 s, the whole call by 10 s.
type QuitOptions struct {
	RequestTimeout time.Duration // one request; zero means DefaultQuitRequestTimeout
	Timeout        time.Duration // the whole call; zero means DefaultQuitTimeout
	Backoff        Backoff       // delays between attempts; nil means DefaultQuitBackoff()
	Logger         *slog.Logger  // nil means no logs
	// RefusedMeansGone takes a refused connection (nothing listens at the URL, nor at any of the
	// Alternates) as a sidecar that is already gone: Quit succeeds at once, without retries,
	// with QuitResult.Gone set. Set it when the pod is being deleted: the kubelet stops the
	// sidecar at the same moment it sends the app SIGTERM, so a refused quit then is the outcome
	// that was asked for, not a failure to retry and warn about.
	RefusedMeansGone bool
	// NotStartedFor, when positive, is how long a sidecar that has refused every connection may
	// take to start listening: Quit keeps trying, without spending Backoff's retries, and the
	// whole call may take this much longer than Timeout. Set it for a sidecar that nothing
	// waited for (one without a readiness check, such as Vault Agent, or with waiting off): a
	// quick command may end before such a sidecar has even started, and a quit given up then
	// leaves it running for good.
	NotStartedFor time.Duration
}

// notStartedPoll is how often Quit tries a sidecar that has not started listening yet.
const notStartedPoll = 100 * time.Millisecond

// QuitBackoff is the retry policy of a quit, the one home of it: at most retries retries,
// 100 ms apart at first, twice as long each time, never more than 1 s apart (100 ms, 200 ms,
// 400 ms, 800 ms, 1 s, 1 s, ...). The delays start short because the pod waits on the quit,
// and the cap keeps many retries within a quit timeout of seconds. sidesync's --quit-retries
// gives retries.
func QuitBackoff(retries int) Backoff {
	return Limit(Exponential{Initial: 100 * time.Millisecond, Factor: 2, Max: time.Second}, retries)
}

// DefaultQuitBackoff is the retry policy of Quit when QuitOptions.Backoff is nil:
// QuitBackoff(DefaultQuitRetries), that is 3 retries, 100 ms, 200 ms and 400 ms apart.
func DefaultQuitBackoff() Backoff { return QuitBackoff(DefaultQuitRetries) }

// QuitResult describes a quit request that the sidecar took.
type QuitResult struct {
	URL        string // the URL that took it (URL or one of the Alternates)
	StatusCode int    // 0 when Closed
	Body       string
	// Closed is set when no answer came because the connection was reset or closed right after
	// the request, or refused after an earlier attempt reached the sidecar: it went away, which
	// is what was asked.
	Closed bool
	// Gone is set when the connection was refused and QuitOptions.RefusedMeansGone says that
	// means the sidecar has already gone.
	Gone     bool
	Attempts int
	Took     time.Duration
}

// QuitError is a quit that failed: the sidecar refused, answered an error, or never answered.
type QuitError struct {
	URL      string
	Attempts int
	Took     time.Duration
	Err      error  // the last attempt's error, e.g. a *StatusError
	Hint     string // what probably fixes it, from Call.Hints; "" if nothing is known
}

func (e *QuitError) Error() string {
	s := fmt.Sprintf("quit %s failed after %d attempts in %v: %v", e.URL, e.Attempts, logfmt.Round(e.Took), e.Err)
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

func (e *QuitError) Unwrap() error { return e.Err }

// Quit asks the sidecar to quit, retrying while it is unreachable, times out or answers 5xx,
// 408 or 429, within QuitOptions.Timeout. Any 2xx is success; so is a connection that closes
// right after the request. Other answers (403, 404, 405, ...) fail at once.
func Quit(ctx context.Context, c Call, o QuitOptions) (QuitResult, error) {
	start := time.Now()
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultQuitTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout+max(o.NotStartedFor, 0), ErrTimeout)
	defer cancel()
	q := quitter{call: c, opts: o, log: loggerOrDiscard(o.Logger)}
	backoff := o.Backoff
	if backoff == nil {
		backoff = DefaultQuitBackoff()
	}
	res, retry, err := q.attempt(ctx)
	for retry && httpc.Refused(err) && !q.reached && time.Since(start) < o.NotStartedFor {
		if q.attempts == 1 {
			q.log.Info("nothing listens yet: the sidecar may not have started, as nothing waited for it; trying again",
				"url", q.url(), "for", o.NotStartedFor)
		}
		if !sleep(ctx, notStartedPoll) {
			break
		}
		res, retry, err = q.attempt(ctx)
	}
	for d := range backoff.Delays(nil) {
		if !retry {
			break
		}
		q.log.Info("quit attempt failed, retrying", "url", q.url(), "attempt", q.attempts, "err", err, "in", d)
		if !sleep(ctx, d) {
			break
		}
		prev := err
		res, retry, err = q.attempt(ctx)
		if err != nil && ended(ctx) {
			err = prev // cut short by the overall limit: the previous failure says more
		}
	}
	res.Attempts, res.Took = q.attempts, time.Since(start)
	if err != nil {
		return res, &QuitError{URL: q.url(), Attempts: q.attempts, Took: res.Took, Err: err, Hint: q.hint(err)}
	}
	return res, nil
}

// hint finds the explanation of a failure among the call's hints.
func (q *quitter) hint(err error) string {
	var se *StatusError
	if errors.As(err, &se) {
		return hintFor(q.call.Hints, se.Code, se.Body, false)
	}
	if httpc.Refused(err) {
		return hintFor(q.call.Hints, 0, "", true)
	}
	return ""
}

// quitter is the state of one Quit call.
type quitter struct {
	call     Call
	opts     QuitOptions
	log      *slog.Logger
	attempts int
	current  int  // index into urls() of the URL that last reached something
	reached  bool // some attempt delivered the request to the sidecar
}

func (q *quitter) urls() []string { return append([]string{q.call.URL}, q.call.Alternates...) }
func (q *quitter) url() string    { return q.urls()[q.current] }

// attempt sends the request once (walking the alternates while they refuse) and reports the
// outcome, whether it is worth retrying, and the error.
func (q *quitter) attempt(ctx context.Context) (QuitResult, bool, error) {
	q.attempts++
	timeout := q.opts.RequestTimeout
	if timeout <= 0 {
		timeout = DefaultQuitRequestTimeout
	}
	method := q.call.Method
	if method == "" {
		method = "POST"
	}
	urls := q.urls()
	for i := q.current; ; i++ {
		resp, err := q.send(ctx, method, urls[i], timeout)
		if httpc.Refused(err) && !q.reached && i+1 < len(urls) {
			q.log.Debug("quit endpoint refused, trying the next", "url", urls[i], "next", urls[i+1])
			continue
		}
		q.current = i
		return q.outcome(urls[i], resp, err)
	}
}

// send makes one request, bounded by timeout. When the process (or the system) is out of file
// descriptors, the request never left: it waits for a descriptor to be freed and tries again,
// until ctx ends, without counting an attempt. Many sidecars quit at once under a low
// descriptor limit would otherwise spend their retries in a second and give up (issue 7, fault
// 13); this way each gets its turn within the quit budget.
func (q *quitter) send(ctx context.Context, method, url string, timeout time.Duration) (*httpc.Response, error) {
	pause := time.Millisecond
	for {
		rctx, cancel := context.WithTimeout(ctx, timeout)
		resp, err := send(rctx, method, url, q.call.Header)
		cancel()
		if !OutOfDescriptors(err) {
			return resp, err
		}
		q.log.Debug("out of file descriptors; waiting for one", "url", url, "err", err)
		// Jittered, so that the calls waiting together do not all retry together.
		if !sleep(ctx, pause/2+rand.N(pause)) {
			return resp, err
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// OutOfDescriptors reports whether err is the process (EMFILE) or the system (ENFILE) running
// out of file descriptors: nothing was sent, and trying again once one is free will work.
func OutOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// outcome classifies one request's result.
func (q *quitter) outcome(url string, resp *httpc.Response, err error) (QuitResult, bool, error) {
	res := QuitResult{URL: url}
	switch {
	case err == nil:
		q.reached = true
		res.StatusCode, res.Body = resp.StatusCode, excerpt(resp.Body)
		if resp.StatusCode/100 == 2 {
			return res, false, nil
		}
		c := resp.StatusCode
		retry := c >= 500 || c == 408 || c == 429
		return res, retry, &StatusError{Code: c, Status: resp.Status, Body: res.Body}
	case httpc.ClosedAfterSend(err), httpc.Refused(err) && q.reached:
		res.Closed = true
		return res, false, nil
	case httpc.Refused(err) && q.opts.RefusedMeansGone:
		res.Gone = true
		return res, false, nil
	default:
		var he *httpc.Error
		if errors.As(err, &he) && he.Sent {
			q.reached = true // it has the request; if it is gone next time, it quit
		}
		return res, true, err
	}
}
