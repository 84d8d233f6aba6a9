package stream

import (
	"regexp"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// styled is n written as YAML in the style st. yaml.v3's encoder indents by st.indent only
// where it is 2: by 4, it indents what a list's element holds from the element's dash rather
// than from its key, and with CompactSeqIndent it puts lists two columns right of their key.
// So n is written with an indentation of 2, lists indented, and then restyled.
func styled(n *yaml3.Node, st style) ([]byte, error) {
	out, err := encode(n, style{indent: 2})
	if err != nil {
		return nil, err
	}
	return restyle(out, st), nil
}

// blockHeader matches the end of a line that starts a block scalar: "key: |-", "- >".
var blockHeader = regexp.MustCompile(`(^|: )[|>][-+1-9]*( #.*)?$`)

// restyle rewrites out, YAML that yaml.v3 wrote with an indentation of 2 and lists indented
// under their keys, in the style st: a mapping's keys st.indent right of its key, a list at its
// key's column (st.compact) or as a mapping would be, an element's content st.item columns
// right of its dash. The lines of a block scalar move as its first line does; a comment goes
// where the line after it goes.
func restyle(out []byte, st style) []byte {
	type frame struct{ src, dst int }
	stack := []frame{{0, 0}}
	var b strings.Builder
	var comments []string
	scalar, shift := -1, 0  // a block scalar's lines: deeper than scalar, moved by shift
	at := func(i int) int { // where a line indented by i goes
		for j := len(stack) - 1; j > 0; j-- {
			if stack[j].src <= i {
				return stack[j].dst + i - stack[j].src
			}
		}
		return i
	}
	flush := func() {
		for _, c := range comments {
			i := indentation(c)
			b.WriteString(strings.Repeat(" ", at(i)) + c[i:])
		}
		comments = comments[:0]
	}
	for _, line := range lines(out) {
		i, rest := indentation(line), strings.TrimLeft(line, " ")
		if scalar >= 0 && (strings.TrimSpace(line) == "" || i > scalar) {
			if strings.TrimSpace(line) != "" {
				b.WriteString(strings.Repeat(" ", i+shift))
			}
			b.WriteString(rest)
			continue
		}
		scalar = -1
		if strings.HasPrefix(rest, "#") {
			comments = append(comments, line)
			continue
		}
		for len(stack) > 1 && stack[len(stack)-1].src > i {
			stack = stack[:len(stack)-1]
		}
		if top := stack[len(stack)-1]; top.src < i {
			d := st.indent
			if st.compact && strings.HasPrefix(rest, "-") {
				d = 0
			}
			stack = append(stack, frame{i, top.dst + d})
		}
		dst := stack[len(stack)-1].dst
		flush()
		b.WriteString(strings.Repeat(" ", dst))
		src := i
		for len(rest) > 1 && strings.Contains("-?:", rest[:1]) && rest[1] == ' ' {
			w := 2 // an explicit key's "? " and ": "
			if rest[0] == '-' {
				w = st.item
			}
			b.WriteString(rest[:1] + strings.Repeat(" ", w-1))
			rest, src, dst = rest[2:], src+2, dst+w
			stack = append(stack, frame{src, dst})
		}
		b.WriteString(rest)
		if blockHeader.MatchString(strings.TrimRight(rest, "\n")) {
			scalar, shift = src, dst-src
			if !strings.Contains(rest, ": ") {
				scalar = i // "- |": its lines are right of the dash
			}
		}
	}
	flush()
	return []byte(b.String())
}
