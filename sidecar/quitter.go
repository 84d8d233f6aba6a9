package sidecar

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"time"

	"github.com/sidesync/sidesync/internal/pod/httpc"
)

// dialFunc makes the connection of a quit request to addr (host:port), as httpc.Request.Dial.
type dialFunc func(ctx context.Context, addr string) (net.Conn, error)

// quitter is the state of one Quit call.
type quitter struct {
	call     Call
	opts     QuitOptions
	dial     dialFunc // nil: TCP
	log      *slog.Logger
	start    time.Time
	end      endOfQuit // when the call ends
	attempts int
	current  int  // index into urls() of the URL that last reached something
	reached  bool // some attempt delivered the request to the sidecar
	// unanswered counts the attempts whose connection closed right after the request, with no
	// answer.
	unanswered int
}

// newQuitter starts the state of a Quit call, now.
func newQuitter(c Call, o QuitOptions, dial dialFunc) *quitter {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultQuitTimeout
	}
	start := time.Now()
	return &quitter{call: c, opts: o, dial: dial, log: loggerOrDiscard(o.Logger), start: start,
		end: newEndOfQuit(start, timeout, o.NotStartedFor)}
}

// endOfQuit is when a Quit call ends: Timeout after its start; each refused connection moves it
// on to Timeout after the refusal, never past NotStartedFor + Timeout after the start; once a
// connection has been accepted it moves no more (QuitOptions.NotStartedFor). Only a sidecar
// that has not started listening is given more time: one that listens and never answers must
// not hold the pod for NotStartedFor (--timeout, minutes) instead of Timeout (seconds).
type endOfQuit struct {
	at       time.Time // the deadline as it stands
	latest   time.Time // the furthest refusals may move it
	timeout  time.Duration
	listened bool // a connection was accepted
}

func newEndOfQuit(start time.Time, timeout, notStartedFor time.Duration) endOfQuit {
	at := start.Add(timeout)
	return endOfQuit{at: at, latest: at.Add(max(notStartedFor, 0)), timeout: timeout}
}

// saw takes in the outcome of one request, err, known at now.
func (e *endOfQuit) saw(err error, now time.Time) {
	switch {
	case e.listened:
	case httpc.Refused(err):
		t := now.Add(e.timeout)
		if t.After(e.latest) {
			t = e.latest
		}
		if t.After(e.at) {
			e.at = t
		}
	case connected(err):
		e.listened = true
	}
}

// connected reports whether a request that ended with err had a connection: it was answered,
// or failed while writing the request or reading the answer.
func connected(err error) bool {
	if err == nil {
		return true
	}
	he, ok := errors.AsType[*httpc.Error](err)
	return ok && (he.Op == "write" || he.Op == "read")
}

// bounded is ctx ending at the call's deadline as it stands now, with ErrTimeout as the cause.
func (q *quitter) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithDeadlineCause(ctx, q.end.at, ErrTimeout)
}

// sleep waits d, or until ctx ends or the call's deadline passes; it reports whether it slept
// the whole d.
func (q *quitter) sleep(ctx context.Context, d time.Duration) bool {
	ctx, cancel := q.bounded(ctx)
	defer cancel()
	return sleep(ctx, d)
}

// ended reports whether ctx has ended or the call's deadline has passed.
func (q *quitter) ended(ctx context.Context) bool {
	return ended(ctx) || !time.Now().Before(q.end.at)
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
		q.end.saw(err, time.Now())
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
		resp, err := q.sendOnce(ctx, method, url, timeout)
		if !OutOfDescriptors(err) {
			return resp, err
		}
		q.log.Debug("out of file descriptors; waiting for one", "url", url, "err", err)
		// Jittered, so that the calls waiting together do not all retry together.
		if !q.sleep(ctx, pause/2+rand.N(pause)) {
			return resp, err
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// sendOnce makes one request on a connection of its own, closed after the answer, bounded by
// timeout and by the call's deadline. On a fresh connection, a reset or EOF right after the
// request means that the sidecar took it and went away, or that its handler failed, which Quit
// tells apart by asking again; on a kept connection it could also be the sidecar closing it
// while idle.
func (q *quitter) sendOnce(ctx context.Context, method, url string, timeout time.Duration) (*httpc.Response, error) {
	ctx, cancel := q.bounded(ctx)
	defer cancel()
	ctx, cancelRequest := context.WithTimeout(ctx, timeout)
	defer cancelRequest()
	req, err := request(method, url, q.call.Header)
	if err != nil {
		return nil, err
	}
	req.Dial = q.dial
	return httpc.Do(ctx, req, bodyExcerptLimit)
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
	case httpc.Refused(err) && q.reached:
		res.Closed = true
		return res, false, nil
	case httpc.ClosedAfterSend(err):
		q.reached = true
		q.unanswered++
		return res, true, fmt.Errorf("%w (%w)", errUnanswered, err)
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
