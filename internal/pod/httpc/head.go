package httpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// maxHeadSize bounds the status lines and header fields read for one exchange, interim 1xx
// responses included, so a misbehaving server cannot grow memory or keep us reading forever.
const maxHeadSize = 64 << 10

var errHeadTooLarge = fmt.Errorf("response head larger than %d bytes", maxHeadSize)

// readHead reads the status line and header fields of the final response into resp, skipping
// interim 1xx responses (100 Continue, 102 Processing, 103 Early Hints), which carry no body.
//
// resp may hold the previous response of the same connection: its Header slice is reused, and
// a status or field that reads as it did then keeps its string, so that a sidecar giving the
// same answer probe after probe costs no allocation (a Client's steady state).
func readHead(br *bufio.Reader, resp *Response) error {
	budget := maxHeadSize
	for {
		if err := readOneHead(br, &budget, resp); err != nil {
			return err
		}
		switch {
		case resp.StatusCode == 101:
			return errors.New("unexpected 101 Switching Protocols")
		case resp.StatusCode >= 200:
			return nil
		}
	}
}

// readOneHead reads one status line and its header fields, up to the empty line.
func readOneHead(br *bufio.Reader, budget *int, resp *Response) error {
	line, err := readLine(br, budget)
	if err != nil {
		return err
	}
	if err := parseStatusLine(line, resp); err != nil {
		return err
	}
	fields := resp.Header[:0]
	for {
		line, err := readLine(br, budget)
		if err != nil {
			return unexpectedEOF(err)
		}
		if len(line) == 0 {
			resp.Header = fields
			return nil
		}
		if fields, err = appendField(fields, line); err != nil {
			return err
		}
	}
}

// readLine returns the next line without its LF or CRLF, charging its length to budget. A lone
// LF is accepted as a line end, as RFC 9112 allows recipients to. EOF before any byte is io.EOF
// (the server closed cleanly); EOF inside a line is io.ErrUnexpectedEOF.
//
// A line that fits in br's buffer, as every real one does, is returned in place: it is valid
// until the next read from br. Only a longer one is copied.
func readLine(br *bufio.Reader, budget *int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > *budget {
			return nil, errHeadTooLarge
		}
		*budget -= len(chunk)
		if line == nil && err == nil {
			return trimEOL(chunk), nil
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return trimEOL(line), nil
		case err == io.EOF && len(line) > 0:
			return nil, io.ErrUnexpectedEOF
		case err != bufio.ErrBufferFull:
			return nil, err
		}
	}
}

// trimEOL drops the LF that ends line, and a CR before it.
func trimEOL(line []byte) []byte {
	return bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
}

// unexpectedEOF turns a clean EOF in the middle of a head into io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseStatusLine parses `HTTP/1.x SSS reason` into resp; the reason phrase may be empty or
// missing.
func parseStatusLine(line []byte, resp *Response) error {
	proto, rest, _ := bytes.Cut(line, []byte(" "))
	if len(proto) != len("HTTP/1.1") || !bytes.HasPrefix(proto, []byte("HTTP/1.")) || !isDigit(proto[7]) {
		return fmt.Errorf("malformed status line %q", clip(string(line)))
	}
	code, reason, _ := bytes.Cut(rest, []byte(" "))
	if len(code) != 3 || code[0] < '1' || !isDigit(code[0]) || !isDigit(code[1]) || !isDigit(code[2]) {
		return fmt.Errorf("malformed status code in %q", clip(string(line)))
	}
	if hasCTL(reason) {
		return fmt.Errorf("malformed reason phrase in %q", clip(string(line)))
	}
	status := code // "SSS reason", or "SSS" when the reason is empty
	if len(reason) > 0 {
		status = rest
	}
	resp.StatusCode = int(code[0]-'0')*100 + int(code[1]-'0')*10 + int(code[2]-'0')
	resp.Status = reuse(resp.Status, status)
	resp.Proto = reuse(resp.Proto, proto)
	return nil
}

// appendField parses `Name: value` and appends it to fields. Whitespace before the colon and
// obs-fold continuation lines are rejected, as RFC 9112 allows, because they are how response
// splitting hides. The field that the previous response had at this position, still in the
// slice's spare capacity, lends its strings when they are the same.
func appendField(fields []Header, line []byte) ([]Header, error) {
	name, value, ok := bytes.Cut(line, []byte(":"))
	if !ok || !isToken(name) {
		return fields, fmt.Errorf("malformed header line %q", clip(string(line)))
	}
	value = bytes.Trim(value, " \t")
	if hasCTL(value) {
		return fields, fmt.Errorf("invalid character in header %q", clip(string(name)))
	}
	var prev Header
	if n := len(fields); n < cap(fields) {
		prev = fields[:n+1][n]
	}
	return append(fields, Header{Name: reuse(prev.Name, name), Value: reuse(prev.Value, value)}), nil
}

// reuse returns prev when it holds exactly b, and a new string of b otherwise. The comparison
// itself does not allocate.
func reuse(prev string, b []byte) string {
	if string(b) == prev {
		return prev
	}
	return string(b)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// hasCTL reports control characters other than HTAB, which a field value or reason may not hold.
func hasCTL[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return true
		}
	}
	return false
}

// clip keeps quoted server data short in error messages.
func clip(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
