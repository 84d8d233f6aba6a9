package emulator

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Outcome says how the server finishes a connection after a request.
type Outcome int

const (
	// Answer writes the Reply's Response and closes the connection.
	Answer Outcome = iota
	// Hang holds the connection open without answering until the server
	// closes or the peer goes away: a wedged sidecar.
	Hang
	// Reset closes the connection with SO_LINGER 0, so the peer sees
	// ECONNRESET instead of an answer: a crashing sidecar.
	Reset
	// Drop closes the connection without answering, so the peer sees EOF.
	Drop
)

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
	}
	return "answer"
}

// Reply is a Handler's decision about one request.
type Reply struct {
	// Outcome says whether to answer, hang, reset or drop.
	Outcome Outcome
	// Response is the answer; it is used only when Outcome is Answer.
	Response Response
	// After, when not nil, runs once the answer has been written (or the
	// connection reset or dropped). It runs on the connection's goroutine
	// and must not block: Server.Close waits for that goroutine.
	After func()
}

// Handler decides how to answer one request.
type Handler func(r *Request) Reply

// Server is a minimal HTTP/1.1 server on package net: one request per
// connection, then close. It exists because the production binary must
// not link net/http (see the package documentation).
type Server struct {
	handler Handler
	logf    func(r *Request, result string)

	mu     sync.Mutex
	closed bool
	lns    map[net.Listener]struct{}
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// lingerTimeout bounds how long an answered connection waits for the peer
// to close its side before the server closes it anyway.
const lingerTimeout = 2 * time.Second

// errServerClosed is returned by Start after Close.
var errServerClosed = errors.New("emulator: server closed")

// NewServer returns a Server that passes each request to h. When logf is
// not nil it is called once per request with the status code, or "hang",
// "reset" or "eof", as soon as the outcome is decided.
func NewServer(h Handler, logf func(r *Request, result string)) *Server {
	return &Server{
		handler: h,
		logf:    logf,
		lns:     make(map[net.Listener]struct{}),
		conns:   make(map[net.Conn]struct{}),
	}
}

// Start accepts connections on ln in the background until Close. It fails
// if the server is already closed, and then closes ln.
func (s *Server) Start(ln net.Listener) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		ln.Close()
		return errServerClosed
	}
	s.lns[ln] = struct{}{}
	s.wg.Add(1)
	go s.accept(ln)
	return nil
}

// Close stops every listener, closes every open connection (which ends
// hanging ones) and waits until all connection goroutines have returned.
// It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for ln := range s.lns {
		ln.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

func (s *Server) accept(ln net.Listener) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // closed listener, or a fatal error: either way stop
		}
		if s.track(c) {
			go s.serve(c)
		}
	}
}

// track registers c, or closes it when the server is closing. The
// WaitGroup is only added to under mu while open, so Close never races an
// Add.
func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Server) forget(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

// serve handles the single request of connection c.
func (s *Server) serve(c net.Conn) {
	defer s.wg.Done()
	defer s.forget(c)
	br := bufio.NewReaderSize(c, maxHeadBytes)
	req, err := readRequest(c, br)
	req.Peer = c.RemoteAddr()
	var reply Reply
	var se *statusError
	switch {
	case err == nil:
		reply = s.handler(req)
	case errors.As(err, &se):
		reply = Reply{Response: Response{
			Status: se.status,
			Header: []Field{{"content-type", "text/plain"}},
			Body:   []byte(statusText(se.status)),
		}}
	default:
		return // the peer went away or sent nothing: nobody to answer
	}
	s.finish(c, br, req, reply)
}

// readRequest reads the head and the body of one request, sending
// "100 Continue" first when the client waits for it (RFC 9110 §10.1.1).
func readRequest(c net.Conn, br *bufio.Reader) (*Request, error) {
	req, err := readHead(br)
	if err != nil {
		return req, err
	}
	hasBody := req.chunked || req.contentLength > 0
	if hasBody && req.contentLength <= maxBodyBytes && req.Proto == "HTTP/1.1" &&
		strings.EqualFold(req.Get("Expect"), "100-continue") {
		if _, err := io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return req, err
		}
	}
	return req, discardBody(br, req)
}

// finish carries out reply on c and logs the outcome.
func (s *Server) finish(c net.Conn, br *bufio.Reader, req *Request, reply Reply) {
	result := reply.Outcome.String()
	if reply.Outcome == Answer {
		result = strconv.Itoa(reply.Response.Status)
	}
	if s.logf != nil {
		s.logf(req, result)
	}
	switch reply.Outcome {
	case Hang:
		// Reading returns only when the peer leaves or Close closes c.
		io.Copy(io.Discard, br)
	case Reset:
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
	case Drop:
		c.Close()
	default:
		writeResponse(bufio.NewWriter(c), req.Method, reply.Response)
		// Send FIN now so the client sees the end of the answer at once.
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
	}
	if reply.After != nil {
		reply.After()
	}
	if reply.Outcome == Answer {
		// Wait for the peer to close before closing: closing with unread
		// input (a refused, half-read request) would send RST and could
		// destroy the answer in flight.
		c.SetReadDeadline(time.Now().Add(lingerTimeout))
		io.CopyN(io.Discard, br, maxBodyBytes)
	}
}
