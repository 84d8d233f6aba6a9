package emulator

import (
	"bufio"
	"strconv"
	"strings"
)

// Field is one HTTP header field. Fields are kept as ordered slices rather
// than maps so that answers go out in a fixed, reproducible order.
type Field struct {
	Name  string
	Value string
}

// Response is a complete answer: status, header fields and body. The
// server adds content-length and "connection: close" itself.
type Response struct {
	Status int
	Header []Field
	Body   []byte
}

// Text returns a Response with the given status and body and no header
// fields, leaving the content type to the profile's fallback headers.
func Text(status int, body string) Response {
	return Response{Status: status, Body: []byte(body)}
}

// lookup finds the first field named name, compared case-insensitively.
func lookup(fields []Field, name string) (string, bool) {
	for _, f := range fields {
		if strings.EqualFold(f.Name, name) {
			return f.Value, true
		}
	}
	return "", false
}

// withFallback appends each fallback field whose name the response does
// not already carry, the way Envoy fills in unset admin headers
// (ref §1.1, populateFallbackResponseHeaders).
func withFallback(header, fallback []Field) []Field {
	out := header
	for _, f := range fallback {
		if _, ok := lookup(header, f.Name); !ok {
			out = append(out, f)
		}
	}
	return out
}

// writeResponse writes resp as HTTP/1.1 with "connection: close". A HEAD
// request gets the same head, including the content-length the body would
// have, but no body (RFC 9110 §9.3.2).
func writeResponse(w *bufio.Writer, method string, resp Response) error {
	w.WriteString("HTTP/1.1 " + strconv.Itoa(resp.Status) + " " + statusText(resp.Status) + "\r\n")
	for _, f := range resp.Header {
		if isFraming(f.Name) {
			continue
		}
		w.WriteString(f.Name + ": " + oneLine(f.Value) + "\r\n")
	}
	// RFC 9110 §8.6: no content-length (and no body) on 1xx and 204;
	// 304 has no body either.
	noBody := resp.Status/100 == 1 || resp.Status == 204 || resp.Status == 304
	if !noBody {
		w.WriteString("content-length: " + strconv.Itoa(len(resp.Body)) + "\r\n")
	}
	w.WriteString("connection: close\r\n\r\n")
	if !noBody && method != "HEAD" {
		w.Write(resp.Body)
	}
	return w.Flush()
}

// isFraming reports the fields that only the server writes; a handler's
// copy is dropped so that the framing can never disagree with the body.
func isFraming(name string) bool {
	switch strings.ToLower(name) {
	case "content-length", "transfer-encoding", "connection":
		return true
	}
	return false
}

// oneLine keeps a header value on one line so that no handler can split
// the response.
func oneLine(v string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(v)
}

// statusText is the reason phrase for the codes the emulators send.
func statusText(code int) string {
	switch code {
	case 100:
		return "Continue"
	case 200:
		return "OK"
	case 204:
		return "No Content"
	case 400:
		return "Bad Request"
	case 403:
		return "Forbidden"
	case 404:
		return "Not Found"
	case 405:
		return "Method Not Allowed"
	case 413:
		return "Content Too Large"
	case 431:
		return "Request Header Fields Too Large"
	case 500:
		return "Internal Server Error"
	case 501:
		return "Not Implemented"
	case 503:
		return "Service Unavailable"
	case 505:
		return "HTTP Version Not Supported"
	}
	return "Status " + strconv.Itoa(code)
}
