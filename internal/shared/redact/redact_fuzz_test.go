package redact

import (
	"strings"
	"testing"
)

// FuzzPlantedPassword redacts arbitrary text with a credential planted in a URL inside it (log
// lines and error messages quote sidecar URLs and answers). String must not panic; it is
// idempotent (so no URL in its output has userinfo other than Mask); it changes nothing in text
// without "@" or "://"; and the planted password is gone from the output. (FuzzString, in
// redact_test.go, checks String alone.)
func FuzzPlantedPassword(f *testing.F) {
	for _, s := range [][3]string{
		{"GET ", "s3cr3t-pw", "/ready: 503"},
		{`quit "`, "p@ss:word", `/quitquitquit": connection refused`},
		{"x://a", "hunter2!!", "@x/y"},
		{"no url here ", "password", ""},
		{"1http://", "token1234", ", next http://u:v@h"},
		{"\t<", "secret99", ">"},
		{"", "päßwörd", "://@"},
		{"url=", "pw123456", "ready"}, {"http://a:b@h1/q,", "c-d-e-f-g", "q"}, {"://u:p@h ", "12345678", ""},
		{"http://u:p@h\t", "y-secret", "\thttp://x@y"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, prefix, secret, suffix string) {
		for _, s := range []string{prefix, prefix + suffix, prefix + "http://user:" + secret + "@127.0.0.1:15000/" + suffix} {
			out := String(s)
			if again := String(out); again != out {
				t.Fatalf("String(%q) = %q, and String of that = %q", s, out, again)
			}
			if (!strings.Contains(s, "@") || !strings.Contains(s, "://")) && out != s {
				t.Fatalf("String(%q) = %q changed text without a URL with userinfo", s, out)
			}
		}
		planted := "http://user:" + secret + "@127.0.0.1:15000/"
		// A secret that the redacted text holds anyway (in the prefix, the host, across a
		// boundary) proves nothing.
		clean := prefix + "http://" + Mask + "@127.0.0.1:15000/" + suffix
		if len(secret) < 8 || strings.ContainsAny(secret, " \t\n\r\"'<>,@") || strings.Contains(clean, secret) {
			return
		}
		if out := String(prefix + planted + suffix); strings.Contains(out, secret) {
			t.Fatalf("String(%q) = %q keeps the password %q", prefix+planted+suffix, out, secret)
		}
	})
}
