package emulator

import (
	"net/http"
	"strconv"
	"strings"
)

// Field is one HTTP header field. Fields are kept as ordered slices rather
// than maps so that route tables read as data.
type Field struct {
	Name  string
	Value string
}

// Response is a complete answer: status, header fields and body. The
// server adds content-length itself and nothing else: no date, and no
// content type unless the Response has one or asks for sniffing.
type Response struct {
	Status int
	Header []Field
	Body   []byte
	// Sniff lets net/http choose the content type from the body when the
	// Response sets none, as it does for a Go sidecar's handler that
	// writes a body without setting one (see answers.go). Without it an
	// answer that sets no content type has none, as with Envoy and
	// linkerd2-proxy.
	Sniff bool
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

// writeResponse writes resp through net/http. A HEAD request gets the same
// head, including the content-length the body would have, but no body
// (RFC 9110 §9.3.2; net/http drops the body). The answer is flushed, so
// that it is on the wire before a Reply's After runs.
func writeResponse(w http.ResponseWriter, resp Response) {
	h := w.Header()
	for _, f := range resp.Header {
		if !isFraming(f.Name) {
			h.Add(f.Name, f.Value) // net/http turns CR and LF in values into spaces
		}
	}
	// A nil entry stops net/http from adding the field.
	h["Date"] = nil
	if _, typed := h["Content-Type"]; !typed && !resp.Sniff {
		h["Content-Type"] = nil
	}
	// RFC 9110 §8.6: no content-length (and no body) on 1xx and 204;
	// 304 has no body either.
	hasBody := resp.Status/100 != 1 && resp.Status != 204 && resp.Status != 304
	if hasBody {
		h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	}
	w.WriteHeader(resp.Status)
	if hasBody {
		w.Write(resp.Body)
	}
	http.NewResponseController(w).Flush()
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
