package httpc

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

// endless is a server that never stops sending: the same byte forever.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

// counting counts the bytes read through it.
type counting struct {
	r io.Reader
	n int
}

func (c *counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// FuzzReadEndless reads arbitrary bytes as a response that a server follows with endless data
// (a misbehaving sidecar that never stops writing): readResponse must return, having read from
// the connection no more than the answer, the head and trailer budgets, the body limit and one
// buffer of read-ahead, and must keep at most the body limit.
func FuzzReadEndless(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n", "HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 200 OK\r\nX-A: ",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n1;", "HTTP/1.0 204 No Content\r\n\r\n", "",
	} {
		for _, fill := range []byte{'x', '\n', '0', ' '} {
			f.Add([]byte(seed), fill, uint16(64), false)
		}
		f.Add([]byte(seed), byte('1'), uint16(4096), true)
	}
	f.Fuzz(func(t *testing.T, answer []byte, fill byte, limit uint16, head bool) {
		lim := int(limit%8192) + 1
		method := "GET"
		if head {
			method = "HEAD"
		}
		c := &counting{r: io.MultiReader(bytes.NewReader(answer), endless(fill))}
		resp := new(Response)
		_, err := readResponse(bufio.NewReaderSize(c, readBufSize), resp, method, lim)
		bound := len(answer) + maxHeadSize + maxTrailerSize + lim + 2*readBufSize
		if c.n > bound {
			t.Fatalf("read %d bytes, over %d (answer %d bytes, limit %d), err %v", c.n, bound, len(answer), lim, err)
		}
		if len(resp.Body) > lim {
			t.Fatalf("kept %d bytes of body, over the limit %d", len(resp.Body), lim)
		}
	})
}
