package stream

import (
	"bytes"
	"fmt"
	"strings"
)

// A chunk is what lies between two document separators of a YAML stream, as kubectl's reader
// (k8s.io/apimachinery/pkg/util/yaml.YAMLReader) splits it: data[start:end], the separator
// lines around it left out.
type chunk struct {
	start, end int
}

// splitYAML splits a YAML stream into chunks as YAMLReader does, and keeps where each one is, so
// that a document can be written back byte for byte: a line that starts with --- separates, when
// nothing but spaces and a comment follow it on the line; anything else after --- is an error; no
// chunk is empty (two separators in a row make none). A chunk may hold only comments; that is
// for the reader to see. The error comes after the chunks read before it, as YAMLReader's does.
func splitYAML(data []byte) ([]chunk, error) {
	var chunks []chunk
	start := 0
	for at := 0; at < len(data); {
		end := lineEnd(data, at)
		sep, err := separator(data[at:end])
		if err != nil {
			return chunks, err
		}
		if sep {
			if at > start {
				chunks = append(chunks, chunk{start, at})
			}
			start = end
		}
		at = end
	}
	if len(data) > start {
		chunks = append(chunks, chunk{start, len(data)})
	}
	return chunks, nil
}

// lineEnd is where the line that starts at data[at] ends, its newline included.
func lineEnd(data []byte, at int) int {
	if i := bytes.IndexByte(data[at:], '\n'); i >= 0 {
		return at + i + 1
	}
	return len(data)
}

// separator reports whether line (with its line break, if any, which TrimSpace takes off) is a
// document separator, and refuses one that is followed by more than a comment, as YAMLReader
// does ("--- x").
func separator(line []byte) (bool, error) {
	rest, ok := bytes.CutPrefix(line, []byte("---"))
	if !ok {
		return false, nil
	}
	if trimmed := strings.TrimSpace(string(rest)); trimmed != "" && trimmed[0] != '#' {
		return false, fmt.Errorf("invalid Yaml document separator: %s", trimmed)
	}
	return true, nil
}

// yamlText is a chunk as YAMLReader gives it to the YAML parser: each line ends in \n alone
// (ReadLine drops the \r of \r\n), the last one too. Most chunks are that already.
func yamlText(body []byte) []byte {
	if !bytes.Contains(body, []byte("\r\n")) && bytes.HasSuffix(body, []byte("\n")) {
		return body
	}
	text := bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n"))
	if !bytes.HasSuffix(text, []byte("\n")) {
		text = append(text, '\n')
	}
	return text
}

// blank reports whether a YAML chunk holds nothing but comments and white space.
func blank(chunk []byte) bool {
	for line := range strings.Lines(string(chunk)) {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}
