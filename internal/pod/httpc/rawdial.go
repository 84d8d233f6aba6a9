package httpc

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Connector connects to one loopback address and port, allocating nothing when the answer is a
// refusal (50 probes a second while a sidecar starts, for seconds or minutes, each of which
// would otherwise leave about 2 KB of garbage from the net package and grow the heap until the
// first collection) or, for a TCP check, an accepted connection. It connects a non-blocking
// socket of its own and waits for the outcome with poll(2), which on loopback comes at once; if
// it does not come within a few milliseconds, the Connector gives up and says so, and the caller
// dials as usual, with its context. A Connector is not safe for concurrent use.
type Connector struct {
	sa      unix.Sockaddr
	family  int
	pfd     []unix.PollFd // one, reused
	refused *net.OpError  // the one error a refusal returns, built once
	soErr   int32         // getsockopt(SO_ERROR)'s answer
	soLen   uint32
}

// connectWait bounds the wait for a loopback connect's outcome; it comes in microseconds.
const connectWait = 5 // milliseconds

// NewConnector returns a Connector for addr ("127.0.0.1:15000", "[::1]:4191"), or nil when addr
// is not a loopback IP address and port (a host name must be resolved by the usual dial, and a
// remote address may take a while, which only the usual dial bounds by the context).
func NewConnector(addr string) *Connector {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || ap.Addr().Zone() != "" || !ap.Addr().Unmap().IsLoopback() {
		return nil
	}
	c := &Connector{pfd: make([]unix.PollFd, 1)}
	if ip := ap.Addr().Unmap(); ip.Is4() {
		c.sa, c.family = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ip.As4()}, unix.AF_INET
	} else {
		c.sa, c.family = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ip.As16()}, unix.AF_INET6
	}
	c.refused = &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(ap),
		Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	return c
}

// ErrWouldWait says that the connect did not complete at once: dial as usual instead.
var ErrWouldWait = errors.New("connect would wait")

// Connect connects and returns the open socket (the caller owns it), the refusal (the same
// error value every time, to be treated as read-only), ErrWouldWait, or another failure.
func (c *Connector) Connect() (fd int, err error) {
	fd, err = unix.Socket(c.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	err = unix.Connect(fd, c.sa)
	if err == unix.EINPROGRESS {
		err = c.outcome(fd)
	}
	switch err {
	case nil:
		return fd, nil
	case unix.ECONNREFUSED:
		unix.Close(fd)
		return -1, c.refused
	case ErrWouldWait, unix.EAGAIN, unix.EINTR:
		unix.Close(fd)
		return -1, ErrWouldWait
	default:
		unix.Close(fd)
		return -1, os.NewSyscallError("connect", err)
	}
}

// outcome waits briefly for a connect in progress and returns its result (nil: connected), or
// ErrWouldWait.
func (c *Connector) outcome(fd int) error {
	c.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLOUT}
	n, err := unix.Poll(c.pfd, connectWait)
	if err != nil || n == 0 {
		return ErrWouldWait
	}
	// getsockopt(SO_ERROR) into the Connector's own fields: unix.GetsockoptInt would allocate
	// its result on the heap.
	c.soLen = 4
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_ERROR,
		uintptr(unsafe.Pointer(&c.soErr)), uintptr(unsafe.Pointer(&c.soLen)), 0)
	switch {
	case e != 0:
		return e
	case c.soErr != 0:
		return unix.Errno(c.soErr)
	}
	return nil
}

// Conn connects and returns a net.Conn (which allocates, once per connection), the refusal, or
// ErrWouldWait.
func (c *Connector) Conn() (net.Conn, error) {
	fd, err := c.Connect()
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "")
	defer f.Close() // FileConn has its own copy of the descriptor
	return net.FileConn(f)
}

// Ping connects and closes at once: a TCP readiness check that allocates nothing when it is
// answered at once. It returns nil when the address accepted the connection.
func (c *Connector) Ping() error {
	fd, err := c.Connect()
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}
