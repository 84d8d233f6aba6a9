package stream

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWriteStrings: a new string is written so that it reads back as itself: quoted where
// YAML readers would take it for a boolean, a number, null or a date, escaped where they would
// refuse a character or take it for a line break, and plain where it is safe.
func TestWriteStrings(t *testing.T) {
	tests := []struct{ s, want string }{
		{"64Mi", "v: 64Mi\n"},
		{"10m", "v: 10m\n"},
		{"/sidesync/bin/sidesync", "v: /sidesync/bin/sidesync\n"},
		{"v1.2.3 init-copy job", "v: v1.2.3 init-copy job\n"},
		{"1.2.3", "v: 1.2.3\n"},
		{"", "v: \"\"\n"},
		{"true", "v: \"true\"\n"},
		{"yes", "v: \"yes\"\n"},
		{"Off", "v: \"Off\"\n"},
		{"y", "v: \"y\"\n"},
		{"~", "v: \"~\"\n"},
		{"null", "v: \"null\"\n"},
		{"<<", "v: \"<<\"\n"},
		{"1.5", "v: \"1.5\"\n"},
		{"1e400", "v: \"1e400\"\n"},
		{"0x1F", "v: \"0x1F\"\n"},
		{"0o17", "v: \"0o17\"\n"},
		{"1_000", "v: \"1_000\"\n"},
		{"+5", "v: \"+5\"\n"},
		{".inf", "v: \".inf\"\n"},
		{"-.NaN", "v: \"-.NaN\"\n"},
		{"1:20", "v: \"1:20\"\n"},
		{"2026-12-01", "v: \"2026-12-01\"\n"},
		{"a: b", "v: 'a: b'\n"},
		{"- x", "v: '- x'\n"},
		{"#c", "v: '#c'\n"},
		{" lead", "v: ' lead'\n"},
		{"'q'", "v: '''q'''\n"},
		{"tab\there", "v: \"tab\\there\"\n"},
		{"two\nlines", "v: |-\n  two\n  lines\n"},
		{"nel\u0085", "v: \"nel\\N\"\n"},
		{"line\u2028sep", "v: \"line\\Lsep\"\n"},
		{"para\u2029sep", "v: \"para\\Psep\"\n"},
		{"del\x7f", "v: \"del\\x7F\"\n"},
		{"c1\u0093", "v: \"c1\\x93\"\n"},
		{"\ufeffbom", "v: \"\\uFEFF\\x62\\x6F\\x6D\"\n"}, // yaml.v3 escapes all after a BOM; it reads back
		{"nonchar\uffff", "v: \"nonchar\\uFFFF\"\n"},
		{"cr\r\n", "v: \"cr\\r\\n\"\n"},
	}
	for _, tt := range tests {
		obj := map[string]any{"v": tt.s}
		got := write(t, []Document{{N: 1, Object: obj}}, YAML)
		if got != tt.want {
			t.Errorf("%q written as %q, want %q", tt.s, got, tt.want)
		}
		docs, _ := read(t, got)
		if diff := cmp.Diff([]map[string]any{obj}, objects(docs)); diff != "" {
			t.Errorf("%q written as %q reads back as (-want +got):\n%s", tt.s, got, diff)
		}
	}
}
