package emulator

import (
	"bufio"
	"errors"
	"io"
	"strconv"
	"strings"
)

// discardBody reads the request body and throws it away. No admin endpoint
// looks at a body, but it must be consumed: closing a socket with unread
// input makes the kernel send RST, which would destroy the answer.
func discardBody(br *bufio.Reader, req *Request) error {
	if req.chunked {
		return discardChunked(br)
	}
	if req.contentLength <= 0 {
		return nil
	}
	if req.contentLength > maxBodyBytes {
		return refuse(413, "body larger than %d bytes", maxBodyBytes)
	}
	if _, err := io.CopyN(io.Discard, br, req.contentLength); err != nil {
		return unexpected(err)
	}
	return nil
}

// discardChunked decodes a chunked body (RFC 9112 §7.1) and discards it,
// including any trailer section.
func discardChunked(br *bufio.Reader) error {
	var total int64
	for {
		n := 0
		line, err := readLine(br, &n)
		if err != nil {
			return chunkErr(err)
		}
		sizeText, _, _ := strings.Cut(line, ";") // chunk extensions are ignored
		sizeText = strings.TrimRight(sizeText, " \t")
		size, err := strconv.ParseUint(sizeText, 16, 63)
		if err != nil || !isHex(sizeText) {
			return refuse(400, "malformed chunk size")
		}
		if size == 0 {
			return discardTrailers(br)
		}
		if total += int64(size); total > maxBodyBytes {
			return refuse(413, "body larger than %d bytes", maxBodyBytes)
		}
		if _, err := io.CopyN(io.Discard, br, int64(size)); err != nil {
			return unexpected(err)
		}
		n = 0
		if line, err := readLine(br, &n); err != nil || line != "" {
			return chunkErr(err)
		}
	}
}

// discardTrailers reads trailer fields up to the empty line that ends the
// chunked body.
func discardTrailers(br *bufio.Reader) error {
	total := 0
	for {
		line, err := readLine(br, &total)
		if err != nil {
			return chunkErr(err)
		}
		if line == "" {
			return nil
		}
	}
}

// chunkErr turns a failure inside a chunked body into the answer for it:
// 400 for malformed framing, unchanged for a peer that went away.
func chunkErr(err error) error {
	var se *statusError
	if err == nil || (errors.As(err, &se) && se.status == 431) {
		return refuse(400, "malformed chunked body")
	}
	return unexpected(err)
}

// unexpected reports a body cut short by the peer.
func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return s != ""
}
