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
// says. The returned error is the one that cut the body short.
func readBody(br *bufio.Reader, resp *Response, method string, limit int) error {
	if !hasBody(resp.StatusCode, method) {
		return nil
	}
	if te, ok := joined(resp, "Transfer-Encoding"); ok {
		// RFC 9112 section 6.1: Transfer-Encoding in HTTP/1.0 means the framing is faulty and
		// Content-Length cannot be trusted either; only the close is left.
		if resp.Proto != "HTTP/1.0" && lastCoding(te) == "chunked" {
			return readChunked(br, resp, limit)
		}
		// Any other final coding: only the server closing the connection ends the body.
		return readUntilEOF(br, resp, limit)
	}
	if cl, ok := joined(resp, "Content-Length"); ok {
		n, err := parseContentLength(cl)
		if err != nil {
			return err
		}
		return readLength(br, resp, n, limit)
	}
	return readUntilEOF(br, resp, limit)
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
// fields combine, and whether the field was present at all.
func joined(resp *Response, name string) (string, bool) {
	var vals []string
	for _, h := range resp.Header {
		if strings.EqualFold(h.Name, name) {
			vals = append(vals, h.Value)
		}
	}
	return strings.Join(vals, ","), vals != nil
}

// lastCoding returns the final transfer coding of a Transfer-Encoding value, lower-cased and
// without parameters.
func lastCoding(te string) string {
	if i := strings.LastIndexByte(te, ','); i >= 0 {
		te = te[i+1:]
	}
	te, _, _ = strings.Cut(te, ";")
	return strings.ToLower(strings.Trim(te, " \t"))
}

// parseContentLength accepts one decimal length, or a list of identical ones (a proxy may have
// merged duplicate fields); anything else makes the framing unknowable.
func parseContentLength(v string) (int64, error) {
	n := int64(-1)
	for _, part := range strings.Split(v, ",") {
		part = strings.Trim(part, " \t")
		m, err := strconv.ParseInt(part, 10, 64)
		if err != nil || m < 0 || part[0] == '+' || (n >= 0 && m != n) {
			return 0, fmt.Errorf("invalid Content-Length %q", clip(v))
		}
		n = m
	}
	return n, nil
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
	var buf bytes.Buffer
	_, err := io.CopyN(&buf, br, int64(limit))
	resp.Body = buf.Bytes()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return err
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
	s := strings.TrimRight(string(line), "\r\n")
	s, _, _ = strings.Cut(s, ";")
	s = strings.TrimRight(s, " \t")
	if s == "" || len(s) > 15 {
		return 0, fmt.Errorf("malformed chunk size %q", clip(s))
	}
	n, err := strconv.ParseInt(s, 16, 64)
	if err != nil || n < 0 || s[0] == '+' || s[0] == '-' {
		return 0, fmt.Errorf("malformed chunk size %q", clip(s))
	}
	return n, nil
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
// rather than by bytes.Buffer's 512-byte steps: probes run 50 times a second, and their garbage
// is what a waiting sidesync's memory grows by. Callers bound n by the body limit (64 KiB by
// default), so a server announcing a huge size cannot make it allocate more than that.
func appendN(r io.Reader, b []byte, n int64) ([]byte, error) {
	b = slices.Grow(b, int(n))
	got, err := io.ReadFull(r, b[len(b):len(b)+int(n)])
	return b[:len(b)+got], unexpectedEOF(err)
}
