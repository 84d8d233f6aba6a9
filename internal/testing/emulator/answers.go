package emulator

// Answers shared by several profiles. Istio's pilot-agent, Dapr, Cloud SQL
// Proxy, Consul's dataplane and Vault are Go programs on net/http, whose
// headers follow from the standard library rather than from the sidecar's
// code: http.Error sets a plain-text type and nosniff and appends "\n" to
// the message; a first Write without a content type gets one sniffed from
// the body ("text/plain; charset=utf-8" for the short texts here), which
// the emulator leaves to net/http as well (Response.Sniff); an answer
// without a body gets no content type at all.

// goTextType is the content type Go's net/http gives plain text, by
// http.Error or by sniffing.
const goTextType = "text/plain; charset=utf-8"

// empty is an answer with status and neither body nor content type.
func empty(status int) Response {
	return Response{Status: status}
}

// typed is an answer with an explicit content type.
func typed(status int, contentType, body string) Response {
	return Response{Status: status, Header: []Field{{"content-type", contentType}}, Body: []byte(body)}
}

// goText is a Go handler's w.WriteHeader(status); w.Write(body): net/http
// sniffs the content type from the body.
func goText(status int, body string) Response {
	return Response{Status: status, Body: []byte(body), Sniff: true}
}

// goError is Go's http.Error(w, msg, status): msg plus "\n", plain text,
// nosniff.
func goError(status int, msg string) Response {
	return Response{
		Status: status,
		Header: []Field{{"content-type", goTextType}, {"x-content-type-options", "nosniff"}},
		Body:   []byte(msg + "\n"),
	}
}

// answer wraps a fixed Response as a Handler.
func answer(resp Response) Handler {
	return func(*Request) Reply { return Reply{Response: resp} }
}

// readyAnswer returns a Handler that answers ok when ready reports true
// and notReady otherwise.
func readyAnswer(ready func() bool, ok, notReady Response) Handler {
	return func(*Request) Reply {
		if ready() {
			return Reply{Response: ok}
		}
		return Reply{Response: notReady}
	}
}

// phaseReady returns a readiness test that follows the state clock alone.
func (s *Sidecar) phaseReady() func() bool {
	return func() bool { return s.Phase() == PhaseReady }
}
