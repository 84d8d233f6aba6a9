package sidecar

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
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
	// Timeout bounds the whole call, retries included: it ends Timeout after it started (or
	// after the last refused connection, with NotStartedFor). Each request and each pause
	// between attempts ends at that deadline, whatever RequestTimeout says; a request cut
	// short by it is the call's outcome. Zero means DefaultQuitTimeout.
	Timeout time.Duration
	Backoff Backoff      // delays between attempts; nil means DefaultQuitBackoff()
	Logger  *slog.Logger // nil means no logs
	// RefusedMeansGone takes a refused connection (nothing listens at the URL, nor at any of the
	// Alternates) as a sidecar that is already gone: Quit succeeds at once, without retries,
	// with QuitResult.Gone set. Set it when the pod is being deleted: the kubelet stops the
	// sidecar at the same moment it sends the app SIGTERM, so a refused quit then is the outcome
	// that was asked for, not a failure to retry and warn about.
	RefusedMeansGone bool
	// NotStartedFor, when positive, is how long a sidecar that has refused every connection may
	// take to start listening: Quit keeps trying, every 100 ms, without spending Backoff's
	// retries. Only refused connections buy that time: each moves the end of the call to
	// Timeout after the refusal, never past NotStartedFor + Timeout after the start. Once a
	// connection is accepted the end moves no more, so a sidecar that listens but never
	// answers holds Quit at most Timeout after the later of the call's start and the last
	// refusal: Timeout alone when it was listening from the start. Set it for a sidecar that
	// nothing waited for (one without a readiness check, such as Vault Agent, or with waiting
	// off): a quick command may end before such a sidecar has even started, and a quit given up
	// then leaves it running for good.
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
	// Closed is set when the sidecar went away, as asked, without an answer: a connection was
	// refused after an earlier attempt had delivered the request (one closed with no answer, or
	// cut short after it was sent).
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
// 408 or 429, within QuitOptions.Timeout. Any 2xx is success. A connection that closes right
// after the request with no answer is success only once the sidecar is seen gone: Quit asks
// again (without spending Backoff's retries) until a connection is refused or the request is
// answered, because a sidecar whose handler failed closes the connection the same way and runs
// on (Istio's pilot-agent before its Envoy has started, docs/SIDECARS.md 3.3). Other answers
// (403, 404, 405, ...) fail at once.
func Quit(ctx context.Context, c Call, o QuitOptions) (QuitResult, error) {
	return quit(ctx, c, o, nil)
}

// quit is Quit with the connections made by dial (nil: TCP), so that tests can run it against a
// sidecar on net.Pipe, whose waits testing/synctest's fake clock can advance.
func quit(ctx context.Context, c Call, o QuitOptions, dial dialFunc) (QuitResult, error) {
	q := newQuitter(c, o, dial)
	backoff := o.Backoff
	if backoff == nil {
		backoff = DefaultQuitBackoff()
	}
	retries, stop := iter.Pull(backoff.Delays(nil))
	defer stop()
	unanswered, stopUnanswered := iter.Pull(unansweredPolls.Delays(nil))
	defer stopUnanswered()
	var toldNotStarted, toldUnanswered bool
	res, retry, err := q.attempt(ctx)
	for retry {
		var d time.Duration
		// A retry cut short by the overall limit reports the failure before it, which says
		// more; not a wait for a sidecar to start, whose first answer says more than refusals.
		cutSaysLess := true
		switch {
		case httpc.Refused(err) && !q.reached && time.Since(q.start) < o.NotStartedFor:
			if !toldNotStarted {
				toldNotStarted = true
				q.log.Info("nothing listens yet: the sidecar may not have started, as nothing waited for it; trying again",
					"url", q.url(), "for", o.NotStartedFor)
			}
			d, cutSaysLess = notStartedPoll, false
		case errors.Is(err, errUnanswered):
			if !toldUnanswered {
				toldUnanswered = true
				q.log.Info("the sidecar closed the connection with no answer; asking again until it is gone, as one whose handler failed runs on",
					"url", q.url())
			}
			d, _ = unanswered()
		default:
			next, ok := retries()
			if !ok {
				retry = false
				continue
			}
			q.log.Info("quit attempt failed, retrying", "url", q.url(), "attempt", q.attempts, "err", err, "in", next)
			d = next
		}
		if !q.sleep(ctx, d) {
			break
		}
		prev := err
		res, retry, err = q.attempt(ctx)
		if err != nil && q.ended(ctx) && cutSaysLess {
			err = prev
		}
	}
	res.Attempts, res.Took = q.attempts, time.Since(q.start)
	if err != nil {
		if errors.Is(err, errUnanswered) {
			err = fmt.Errorf("%w, %d times in all, and it still listens: it did not take the quit", err, q.unanswered)
		}
		return res, &QuitError{URL: q.url(), Attempts: q.attempts, Took: res.Took, Err: err, Hint: q.hint(err)}
	}
	return res, nil
}

// errUnanswered is an attempt whose connection closed right after the request, with no answer:
// the sidecar either went away, as asked, or failed to handle the request and runs on. Quit asks
// again to tell which.
var errUnanswered = errors.New("the sidecar closed the connection with no answer")

// unansweredPolls are the pauses before asking again a sidecar that closed the connection with
// no answer: short at first, as one that went away refuses at once, then at most one a second,
// as one whose handler failed may take seconds to handle it (and logs each failure).
var unansweredPolls = Exponential{Initial: 50 * time.Millisecond, Factor: 2, Max: time.Second}

// OutOfDescriptors reports whether err is the process (EMFILE) or the system (ENFILE) running
// out of file descriptors: nothing was sent, and trying again once one is free will work.
func OutOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}
