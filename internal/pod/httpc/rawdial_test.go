package httpc

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

// TestConnector: a loopback connect without the net package's garbage, refused or accepted, and
// the same refusal value every time.
func TestConnector(t *testing.T) {
	for _, addr := range []string{"localhost:80", "10.0.0.1:80", "[fe80::1%eth0]:80", "127.0.0.1", "bogus"} {
		if c := NewConnector(addr); c != nil {
			t.Errorf("NewConnector(%q) = %v, want nil: not a loopback IP address and port", addr, c)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := NewConnector(l.Addr().String())
	conn, err := open.Conn()
	if err != nil {
		t.Fatalf("Conn: %v", err)
	}
	accepted, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if conn.LocalAddr().String() != accepted.RemoteAddr().String() {
		t.Errorf("Conn is %v, the listener accepted %v", conn.LocalAddr(), accepted.RemoteAddr())
	}
	conn.Close()
	accepted.Close()
	if err := open.Ping(); err != nil {
		t.Errorf("Ping of a listening port: %v", err)
	}
	l.Close()
	closed := NewConnector(l.Addr().String())
	first, second := closed.Ping(), closed.Ping()
	if !errors.Is(first, syscall.ECONNREFUSED) || first != second {
		t.Errorf("Ping of a closed port: %v then %v, want the same refusal twice", first, second)
	}
	if e := (&Error{Op: "dial", Err: first}); !Refused(e) {
		t.Errorf("Refused(%v) = false", e)
	}
	if n := testing.AllocsPerRun(50, func() { closed.Ping() }); n != 0 {
		t.Errorf("a refused Ping allocated %v times", n)
	}
}
