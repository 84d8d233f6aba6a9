package httpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// maxHeadSize bounds the status lines and header fields read for one exchange, interim 1xx
// responses included, so a misbehaving server cannot grow memory or keep us reading forever.
const maxHeadSize = 64 << 10

var errHeadTooLarge = fmt.Errorf("response head larger than %d bytes", maxHeadSize)

// readHead reads the status line and header fields of the final response, skipping interim 1xx
// responses (100 Continue, 102 Processing, 103 Early Hints), which carry no body.
func readHead(br *bufio.Reader) (*Response, error) {
	budget := maxHeadSize
	for {
		resp, err := readOneHead(br, &budget)
		if err != nil {
			return nil, err
		}
		switch {
		case resp.StatusCode == 101:
			return nil, errors.New("unexpected 101 Switching Protocols")
		case resp.StatusCode >= 200:
			return resp, nil
		}
	}
}

// readOneHead reads one status line and its header fields, up to the empty line.
func readOneHead(br *bufio.Reader, budget *int) (*Response, error) {
	line, err := readLine(br, budget)
	if err != nil {
		return nil, err
	}
	resp, err := parseStatusLine(line)
	if err != nil {
		return nil, err
	}
	for {
		line, err := readLine(br, budget)
		if err != nil {
			return nil, unexpectedEOF(err)
		}
		if len(line) == 0 {
			return resp, nil
		}
		h, err := parseField(line)
		if err != nil {
			return nil, err
		}
		resp.Header = append(resp.Header, h)
	}
}

// readLine returns the next line without its LF or CRLF, charging its length to budget. A lone
// LF is accepted as a line end, as RFC 9112 allows recipients to. EOF before any byte is io.EOF
// (the server closed cleanly); EOF inside a line is io.ErrUnexpectedEOF.
func readLine(br *bufio.Reader, budget *int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > *budget {
			return nil, errHeadTooLarge
		}
		*budget -= len(chunk)
		line = append(line, chunk...)
		switch {
		case err == nil:
			line = line[:len(line)-1]
			return bytes.TrimSuffix(line, []byte("\r")), nil
		case err == io.EOF && len(line) > 0:
			return nil, io.ErrUnexpectedEOF
		case err != bufio.ErrBufferFull:
			return nil, err
		}
	}
}

// unexpectedEOF turns a clean EOF in the middle of a head into io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseStatusLine parses `HTTP/1.x SSS reason`; the reason phrase may be empty or missing.
func parseStatusLine(line []byte) (*Response, error) {
	s := string(line)
	proto, rest, _ := strings.Cut(s, " ")
	if len(proto) != len("HTTP/1.1") || !strings.HasPrefix(proto, "HTTP/1.") || !isDigit(proto[7]) {
		return nil, fmt.Errorf("malformed status line %q", clip(s))
	}
	code, reason, _ := strings.Cut(rest, " ")
	if len(code) != 3 || code[0] < '1' || !isDigit(code[0]) || !isDigit(code[1]) || !isDigit(code[2]) {
		return nil, fmt.Errorf("malformed status code in %q", clip(s))
	}
	if hasCTL(reason) {
		return nil, fmt.Errorf("malformed reason phrase in %q", clip(s))
	}
	status := code
	if reason != "" {
		status += " " + reason
	}
	n := int(code[0]-'0')*100 + int(code[1]-'0')*10 + int(code[2]-'0')
	return &Response{StatusCode: n, Status: status, Proto: proto}, nil
}

// parseField parses `Name: value`. Whitespace before the colon and obs-fold continuation lines
// are rejected, as RFC 9112 allows, because they are how response splitting hides.
func parseField(line []byte) (Header, error) {
	s := string(line)
	name, value, ok := strings.Cut(s, ":")
	if !ok || !IsToken(name) {
		return Header{}, fmt.Errorf("malformed header line %q", clip(s))
	}
	value = strings.Trim(value, " \t")
	if hasCTL(value) {
		return Header{}, fmt.Errorf("invalid character in header %q", clip(name))
	}
	return Header{Name: name, Value: value}, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// hasCTL reports control characters other than HTAB, which a field value or reason may not hold.
func hasCTL(s string) bool {
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
