package emulator

import (
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Outcome says how the server finishes a request.
type Outcome int

const (
	// Answer writes the Reply's Response; the connection stays open for
	// the next request (HTTP/1.1 keep-alive) unless the client asked to
	// close it.
	Answer Outcome = iota
	// Hang holds the connection open without answering until the server
	// closes or the peer goes away: a wedged sidecar.
	Hang
	// Reset closes the connection with SO_LINGER 0, so the peer sees
	// ECONNRESET instead of an answer: a crashing sidecar.
	Reset
	// Drop closes the connection without answering, so the peer sees EOF.
	Drop
	// Garbage writes bytes that are no HTTP response at all and closes
	// the connection: a confused or wrong server on the sidecar's port.
	Garbage
	// Endless answers 200 and then a body that never ends, until the peer
	// goes away or the server closes: a stuck stream.
	Endless
)

// garbageBytes is what Outcome Garbage writes: no status line, binary
// noise, and a blank line that a lenient parser might take for the end of
// a head.
const garbageBytes = "\x00\xff\xfeSSH-2.0-not-http \x1b[31m\r\n\r\n"

// endlessHead starts the answer of Outcome Endless: no Content-Length and
// no chunking, so only the connection's end would end the body.
const endlessHead = "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\n"

// String returns the word used for the outcome in request events: "hang",
// "reset" or "eof"; Answer has no word of its own because the event carries
// the status code instead.
func (o Outcome) String() string {
	switch o {
	case Hang:
		return "hang"
	case Reset:
		return "reset"
	case Drop:
		return "eof"
	case Garbage:
		return "garbage"
	case Endless:
		return "endless"
	}
	return "answer"
}

// Reply is a Handler's decision about one request.
type Reply struct {
	// Outcome says whether to answer, hang, reset or drop.
	Outcome Outcome
	// Response is the answer; it is used only when Outcome is Answer.
	Response Response
	// Delay holds the answer back this long (a slow sidecar); Close cuts
	// it short and drops the connection.
	Delay time.Duration
	// After, when not nil, runs once the answer has been flushed to the
	// connection (or the connection reset or dropped). It runs on the
	// request's goroutine and must not block: Server.Close waits for it.
	After func()
}

// Handler decides how to answer one request.
type Handler func(r *Request) Reply

// Server serves a Handler over HTTP/1.1 with net/http, adding what the
// emulated sidecars need on top: a log call per request as soon as its
// outcome is decided, the Hang, Reset and Drop outcomes (by hijacking the
// connection), and a Close that waits for every handler it let start and
// closes hung connections instead of waiting for their peers.
type Server struct {
	handler Handler
	logf    func(r *Request, result string)
	http    *http.Server

	closing chan struct{} // closed by Close: ends Delays

	mu       sync.Mutex
	closed   bool
	lns      []net.Listener        // closed by Close even if Serve has not begun
	hijacked map[net.Conn]struct{} // hung connections, which net/http no longer tracks
	handlers sync.WaitGroup        // running handlers; added to only under mu while open
}

// errServerClosed is returned by Start after Close.
var errServerClosed = errors.New("emulator: server closed")

// NewServer returns a Server that passes each request to h. When logf is
// not nil it is called once per request that reaches the server's
// handling, with the status code, or "hang", "reset" or "eof", as soon as
// the outcome is decided and before it is carried out. Requests that
// net/http itself refuses (a malformed head, say) are answered by net/http
// and not logged. What net/http reports, such as a handler's panic (which
// it recovers from), goes to diagnostics; nil discards it.
func NewServer(h Handler, logf func(r *Request, result string), diagnostics io.Writer) *Server {
	if diagnostics == nil {
		diagnostics = io.Discard
	}
	s := &Server{handler: h, logf: logf, hijacked: make(map[net.Conn]struct{}), closing: make(chan struct{})}
	var protocols http.Protocols
	protocols.SetHTTP1(true) // the admin endpoints emulated speak HTTP/1.1
	s.http = &http.Server{
		Handler:   s,
		Protocols: &protocols,
		// net/http reads up to 4 KiB beyond MaxHeaderBytes before it
		// answers 431.
		MaxHeaderBytes: maxHeadBytes - 4<<10,
		// "OPTIONS *" goes to ServeHTTP, which refuses it like any
		// target that is not a path.
		DisableGeneralOptionsHandler: true,
		// Not the log package's default: a library writes only where it
		// is told to (house style).
		ErrorLog: log.New(diagnostics, "emulator: ", 0),
	}
	return s
}

// Start serves ln in the background until Close. It fails if the server
// is already closed, and then closes ln.
func (s *Server) Start(ln net.Listener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		ln.Close()
		return errServerClosed
	}
	s.lns = append(s.lns, ln)
	go s.http.Serve(ln)
	return nil
}

// Close stops every listener, closes every connection (which ends hanging
// ones) and waits until every handler that started has returned. It is
// safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if !s.closed {
		close(s.closing)
	}
	s.closed = true
	for _, ln := range s.lns {
		ln.Close()
	}
	for c := range s.hijacked {
		c.Close()
	}
	s.mu.Unlock()
	// This closes every connection net/http tracks; it waits for the
	// Serve calls that have begun, so no connection they accepted escapes.
	s.http.Close()
	s.handlers.Wait()
	return nil
}

// ServeHTTP runs the Handler for one request and carries out its Reply.
func (s *Server) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	if !s.enter() {
		// Closing: nobody will wait for this handler, so it must not run.
		// ErrAbortHandler closes the connection without an answer or a log.
		panic(http.ErrAbortHandler)
	}
	defer s.handlers.Done()
	req := newRequest(hr)
	reply, ok := admit(w, hr, req)
	if !ok {
		panic(http.ErrAbortHandler) // the peer went away: nobody to answer
	}
	if reply == nil {
		r := s.handler(req)
		reply = &r
	}
	if s.logf != nil {
		result := reply.Outcome.String()
		if reply.Outcome == Answer {
			result = strconv.Itoa(reply.Response.Status)
		}
		s.logf(req, result)
	}
	s.finish(w, reply)
	if reply.After != nil {
		reply.After()
	}
}

// enter counts a handler in unless the server is closing.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.handlers.Add(1)
	return true
}

// finish carries out reply on the request's connection.
func (s *Server) finish(w http.ResponseWriter, reply *Reply) {
	if reply.Delay > 0 {
		t := time.NewTimer(reply.Delay)
		select {
		case <-t.C:
		case <-s.closing:
			t.Stop()
			panic(http.ErrAbortHandler) // closing: drop the connection unanswered
		}
	}
	if reply.Outcome == Answer {
		writeResponse(w, reply.Response)
		return
	}
	c, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // cannot happen on HTTP/1.1; close anyway
	}
	switch reply.Outcome {
	case Hang:
		if s.track(c) {
			// Reading returns only when the peer leaves or Close closes c.
			io.Copy(io.Discard, rw)
			s.forget(c)
		}
	case Reset:
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
	case Garbage:
		io.WriteString(c, garbageBytes)
	case Endless:
		if s.track(c) {
			// Writing fails only when the peer leaves or Close closes c.
			chunk := []byte(strings.Repeat("endless body\n", 316)) // about 4 KiB
			if _, err := io.WriteString(c, endlessHead); err == nil {
				for {
					if _, err := c.Write(chunk); err != nil {
						break
					}
				}
			}
			s.forget(c)
		}
	}
	c.Close()
}

// track registers a hung connection so that Close can end it, or reports
// false when the server is already closing.
func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.hijacked[c] = struct{}{}
	return true
}

func (s *Server) forget(c net.Conn) {
	s.mu.Lock()
	delete(s.hijacked, c)
	s.mu.Unlock()
}
