package httpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// maxTrailerSize bounds the trailer fields after a chunked body, which are read and discarded.
const maxTrailerSize = 16 << 10

// readBody fills resp.Body and resp.Truncated from br, framing the body as RFC 9112 section 6.3
// says; resp.Body's old contents are dropped and its capacity reused. It reports whether the
// body's end was known from the message itself (no body, Content-Length or chunked) rather
// than from the server closing the connection, and returns the error that cut the body short.
func readBody(br *bufio.Reader, resp *Response, method string, limit int) (framed bool, err error) {
	resp.Body, resp.Truncated = resp.Body[:0], false
	if !hasBody(resp.StatusCode, method) {
		return true, nil
	}
	if coding, ok := lastCoding(resp); ok {
		// RFC 9112 section 6.1: Transfer-Encoding in HTTP/1.0 means the framing is faulty and
		// Content-Length cannot be trusted either; only the close is left.
		if resp.Proto != "HTTP/1.0" && strings.EqualFold(coding, "chunked") {
			return true, readChunked(br, resp, limit)
		}
		// Any other final coding: only the server closing the connection ends the body.
		return false, readUntilEOF(br, resp, limit)
	}
	n, ok, err := contentLength(resp)
	switch {
	case err != nil:
		return false, err
	case ok:
		return true, readLength(br, resp, n, limit)
	}
	return false, readUntilEOF(br, resp, limit)
}

// hasBody reports whether a response to method with that status can carry content at all.
func hasBody(status int, method string) bool {
	switch {
	case method == "HEAD", status < 200, status == 204, status == 304:
		return false
	case method == "CONNECT" && status < 300:
		// The connection becomes a tunnel; there is no body to wait for.
		return false
	}
	return true
}

// joined returns all values of the named header joined by commas, as RFC 9110 says repeated
// fields combine, and whether the field was present at all. It allocates: it is for messages.
func joined(resp *Response, name string) (string, bool) {
	var vals []string
	for _, h := range resp.Header {
		if strings.EqualFold(h.Name, name) {
			vals = append(vals, h.Value)
		}
	}
	return strings.Join(vals, ","), vals != nil
}

// lastCoding returns the final transfer coding of the response (the last element of its
// combined Transfer-Encoding fields) without parameters, and whether there is a
// Transfer-Encoding field at all.
func lastCoding(resp *Response) (string, bool) {
	te, found := "", false
	for _, h := range resp.Header {
		if strings.EqualFold(h.Name, "Transfer-Encoding") {
			te, found = h.Value, true
		}
	}
	if i := strings.LastIndexByte(te, ','); i >= 0 {
		te = te[i+1:]
	}
	te, _, _ = strings.Cut(te, ";")
	return strings.Trim(te, " \t"), found
}

// contentLength accepts one decimal length, or a list of identical ones over one or more fields
// (a proxy may have merged duplicates); anything else makes the framing unknowable. ok is false
// when there is no Content-Length field.
func contentLength(resp *Response) (n int64, ok bool, err error) {
	n = -1
	for _, h := range resp.Header {
		if !strings.EqualFold(h.Name, "Content-Length") {
			continue
		}
		for rest, more := h.Value, true; more; {
			var part string
			part, rest, more = strings.Cut(rest, ",")
			part = strings.Trim(part, " \t")
			m, err := strconv.ParseInt(part, 10, 64)
			if err != nil || m < 0 || part[0] == '+' || (n >= 0 && m != n) {
				v, _ := joined(resp, "Content-Length")
				return 0, false, fmt.Errorf("invalid Content-Length %q", clip(v))
			}
			n = m
		}
	}
	return n, n >= 0, nil
}

// readLength reads a body of n bytes, keeping at most limit of them.
func readLength(br *bufio.Reader, resp *Response, n int64, limit int) error {
	keep := n
	if keep > int64(limit) {
		keep, resp.Truncated = int64(limit), true
	}
	var err error
	resp.Body, err = appendN(br, resp.Body, keep)
	if err != nil {
		resp.Truncated = false
	}
	return err
}

// readUntilEOF reads a body that ends when the server closes the connection.
func readUntilEOF(br *bufio.Reader, resp *Response, limit int) error {
	for len(resp.Body) < limit {
		if len(resp.Body) == cap(resp.Body) {
			// Grow by doubling, from 512 bytes, never past the limit.
			resp.Body = slices.Grow(resp.Body, min(max(512, cap(resp.Body)), limit-len(resp.Body)))
		}
		b := resp.Body[len(resp.Body):min(cap(resp.Body), limit)]
		n, err := br.Read(b)
		resp.Body = resp.Body[:len(resp.Body)+n]
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	// The limit was reached: one byte more, already buffered or not, tells whether it cut anything.
	if _, err := br.Peek(1); err == nil {
		resp.Truncated = true
	} else if err != io.EOF {
		return err
	}
	return nil
}

// readChunked decodes a chunked body, keeping at most limit bytes. Chunk extensions are ignored
// and trailer fields read and discarded.
func readChunked(br *bufio.Reader, resp *Response, limit int) error {
	for {
		size, err := readChunkSize(br)
		if err != nil {
			return err
		}
		if size == 0 {
			return skipTrailers(br)
		}
		room := int64(limit - len(resp.Body))
		if room == 0 {
			resp.Truncated = true
			return nil
		}
		keep := min(size, room)
		if resp.Body, err = appendN(br, resp.Body, keep); err != nil {
			return err
		}
		if size > keep {
			resp.Truncated = true
			return nil
		}
		if err := readChunkEnd(br); err != nil {
			return err
		}
	}
}

// readChunkSize parses a `hex-size [; extensions]` line. The line must fit in the read buffer,
// which is far more than any real chunk header needs.
func readChunkSize(br *bufio.Reader) (int64, error) {
	line, err := br.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull:
		return 0, errors.New("chunk size line too long")
	case err != nil:
		return 0, unexpectedEOF(err)
	}
	s := bytes.TrimRight(line, "\r\n")
	s, _, _ = bytes.Cut(s, []byte(";"))
	s = bytes.TrimRight(s, " \t")
	if len(s) == 0 || len(s) > 15 { // 15 hex digits cannot overflow an int64
		return 0, fmt.Errorf("malformed chunk size %q", clip(string(s)))
	}
	var n int64
	for _, c := range s {
		d, ok := hexDigit(c)
		if !ok {
			return 0, fmt.Errorf("malformed chunk size %q", clip(string(s)))
		}
		n = n<<4 | int64(d)
	}
	return n, nil
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// readChunkEnd consumes the CRLF (or lone LF) after chunk data.
func readChunkEnd(br *bufio.Reader) error {
	c, err := br.ReadByte()
	if err == nil && c == '\r' {
		c, err = br.ReadByte()
	}
	if err != nil {
		return unexpectedEOF(err)
	}
	if c != '\n' {
		return errors.New("malformed chunk: data longer than its size")
	}
	return nil
}

// skipTrailers reads trailer fields up to the empty line that ends a chunked body.
func skipTrailers(br *bufio.Reader) error {
	budget := maxTrailerSize
	for {
		line, err := readLine(br, &budget)
		if errors.Is(err, errHeadTooLarge) {
			return errors.New("trailer section too large")
		}
		if err != nil {
			return unexpectedEOF(err)
		}
		if len(line) == 0 {
			return nil
		}
	}
}

// appendN appends exactly n bytes from r to b. It grows b once, to the size that is known,
// rather than by bytes.Buffer's 512-byte steps, and not at all when a reused b has the room.
// Callers bound n by the body limit (64 KiB by default), so a server announcing a huge size
// cannot make it allocate more than that.
func appendN(r io.Reader, b []byte, n int64) ([]byte, error) {
	b = slices.Grow(b, int(n))
	got, err := io.ReadFull(r, b[len(b):len(b)+int(n)])
	return b[:len(b)+got], unexpectedEOF(err)
}
