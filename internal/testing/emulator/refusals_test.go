package emulator

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestServerRefusesMalformedRequests: net/http refuses a malformed head
// itself, with no log call and without the handler; the Server refuses
// targets that are not paths and bodies it cannot take, with a log call.
func TestServerRefusesMalformedRequests(t *testing.T) {
	ts := startServer(t, func(r *Request) Reply {
		t.Errorf("handler called for %+v", r)
		return hello(r)
	})
	big := strings.Repeat("a", maxHeadBytes)
	for _, tc := range []struct {
		name, request, status string
		logged                bool
	}{
		{"garbage", "GARBAGE\r\n\r\n", "400", false},
		{"two spaces", "GET  /x HTTP/1.1\r\nHost: a\r\n\r\n", "400", false},
		{"bad method", "G@T /x HTTP/1.1\r\nHost: a\r\n\r\n", "400", false},
		{"relative target", "GET x HTTP/1.1\r\nHost: a\r\n\r\n", "400", false},
		{"absolute target", "GET http://a/x HTTP/1.1\r\nHost: a\r\n\r\n", "400", true},
		{"asterisk", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", "400", true},
		{"not http", "GET /x FTP/1.1\r\nHost: a\r\n\r\n", "400", false},
		{"http/2.0", "GET /x HTTP/2.0\r\nHost: a\r\n\r\n", "505", false},
		{"no host", "GET /x HTTP/1.1\r\n\r\n", "400", false},
		{"two hosts", "GET /x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "400", false},
		{"no colon", "GET /x HTTP/1.1\r\nHost: a\r\nBad Header\r\n\r\n", "400", false},
		{"space before colon", "GET /x HTTP/1.1\r\nHost : a\r\n\r\n", "400", false},
		{"bare CR", "GET /x HTTP/1.1\r\nHost: a\rb\r\n\r\n", "400", false},
		{"bad length", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n", "400", false},
		{"signed length", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\nx", "400", false},
		{"two lengths", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxy", "400", false},
		{"gzip coding", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", "501", false},
		{"bad chunk size", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "400", true},
		{"chunk without CRLF", "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxy\r\n0\r\n\r\n", "400", true},
		{"huge body", "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2000000\r\n\r\n", "413", true},
		{"huge header", "GET /x HTTP/1.1\r\nHost: a\r\nX-Big: " + big + "\r\n\r\n", "431", false},
		{"huge head", "GET /x HTTP/1.1\r\nHost: a\r\n" + strings.Repeat("X-A: "+big[:1000]+"\r\n", 17) + "\r\n", "431", false},
	} {
		got := raw(t, ts.addr, tc.request)
		if !strings.HasPrefix(got, "HTTP/1.1 "+tc.status+" ") {
			t.Errorf("%s: answer %q, want status %s", tc.name, got, tc.status)
		}
		l, logged := ts.logged()
		if logged != tc.logged || logged && l.result != tc.status {
			t.Errorf("%s: logged %+v (%v), want %v", tc.name, l, logged, tc.logged)
		}
	}
}

// TestServerRefusesLargeChunkedBody: a chunked body above maxBodyBytes is
// refused with 413 once the limit is crossed.
func TestServerRefusesLargeChunkedBody(t *testing.T) {
	body := struct{ io.Reader }{strings.NewReader(strings.Repeat("z", maxBodyBytes+1))}
	hr := httptest.NewRequest("POST", "/x", body)
	reply, ok := admit(httptest.NewRecorder(), hr, newRequest(hr))
	if !ok || reply == nil || reply.Response.Status != 413 || string(reply.Response.Body) != "Content Too Large" {
		t.Errorf("readBody = %+v, %v; want a 413 refusal", reply, ok)
	}
}

// TestServerIgnoresSilentPeers: a peer that connects and leaves, or cuts
// its body short, gets no answer and no log call.
func TestServerIgnoresSilentPeers(t *testing.T) {
	ts := startServer(t, hello)
	if got := raw(t, ts.addr, ""); got != "" {
		t.Errorf("answer to nothing = %q", got)
	}
	if got := raw(t, ts.addr, "POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc"); got != "" {
		t.Errorf("answer to a cut-off body = %q", got)
	}
	call(t, "GET", "http://"+ts.addr+"/after")
	if l := ts.nextLog(t); l.path != "/after" {
		t.Errorf("first log = %+v, want the /after request", l)
	}
}
