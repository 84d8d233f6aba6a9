// Package redact keeps credentials out of sidesync's output. A sidecar URL may carry a user and
// password ("http://user:pw@127.0.0.1:15000/"); they are never logged, printed, or written to
// the termination message (issue 7, fault 12). The rule is applied to whole log lines and
// messages, not to chosen fields, so that a URL quoted inside an error message is caught too.
// It is a small scanner rather than a regular expression: the pod binary does not link regexp.
package redact

import "strings"

// Mask replaces the userinfo of a URL: the whole of it, since a user name alone can be a token.
const Mask = "xxxxx"

// String returns s with the userinfo of every URL in it replaced by Mask. A URL is a scheme
// (letters, digits, "+", "-" or "."), "://", and what follows up to white space,
// a quote, an angle bracket or a comma; its userinfo is everything before the last "@" there.
// Taking the last "@" covers an unescaped "@" in a password ("p@ss"), as net/url does.
func String(s string) string {
	if !strings.Contains(s, "@") || !strings.Contains(s, "://") {
		return s // the common case
	}
	var b strings.Builder
	done := 0 // s[:done] has been copied to b
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "://")
		if j < 0 {
			break
		}
		start := i + j + 3
		if !hasScheme(s[:i+j]) {
			i = start // not a URL, but one may start within: "://http://user:pw@host"
			continue
		}
		end := start + strings.IndexFunc(s[start:], terminates)
		if end < start {
			end = len(s)
		}
		if at := strings.LastIndexByte(s[start:end], '@'); at >= 0 {
			b.WriteString(s[done:start])
			b.WriteString(Mask)
			done = start + at
		}
		i = end
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// terminates reports whether r ends a URL in running text.
func terminates(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '"', '\'', '<', '>', ',':
		return true
	}
	return false
}

// hasScheme reports whether before ends with something that could be a URL scheme. It is
// lenient (a scheme must start with a letter, but "1http://" is redacted too): redacting a
// non-URL costs nothing, missing a URL leaks a password.
func hasScheme(before string) bool {
	return len(before) > 0 && isSchemeByte(before[len(before)-1])
}

func isSchemeByte(c byte) bool {
	return 'a' <= c|0x20 && c|0x20 <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}
