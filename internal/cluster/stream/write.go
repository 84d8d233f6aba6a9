package stream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Write writes the documents in format f, those whose Object is nil left out, unless Read read
// them so (null).
//
// A document that Read read in format f and whose Object is still the same JSON (numbers by
// their text) is written back byte for byte, with what came before it in the input (the
// separator, comments alone); the stream's last document brings what followed it. A stream
// read and written unchanged is the input.
//
// A changed YAML document is spliced into the YAML it was read from (see spliced): the lines
// of every node that did not change are copied byte for byte (flow collections over several
// lines, the indentation of lists, quoting, comments, blank lines, line breaks), and only the
// entries and elements that changed are written, in the document's indentation. Where that is
// not possible (a document written as flow, anchors), it is merged into its YAML as a whole,
// keeping its comments, key order and untouched values (see merge), and its blank lines and
// spacing (see restore); where that is not safe either (anchors, aliases, a merge that would
// not read back as the object), it is written afresh, keys sorted, after its leading comments.
// Either way its numbers are their exact text.
// A changed JSON document, and any document in the other format or made by the caller, is
// written afresh: JSON indented by two spaces, YAML with keys sorted.
func Write(w io.Writer, docs []Document, f Format) error {
	s := stream{f: f}
	for _, d := range docs {
		if err := s.add(d); err != nil {
			return fmt.Errorf("document %d: %w", d.N, err)
		}
	}
	out := s.b.Bytes()
	// Read takes a stream that starts with { for JSON: YAML that does (an empty object "{}"
	// written first) is marked as YAML by a separator before it.
	if f == YAML && looksJSON(out) {
		out = append([]byte("---\n"), out...)
	}
	_, err := w.Write(out)
	return err
}

// stream is the output of Write, one document after another.
type stream struct {
	b bytes.Buffer
	f Format
}

// nullJSON is the canonical encoding of an empty document.
var nullJSON = []byte("null")

// add writes d: as read when it is unchanged, else merged or afresh.
func (s *stream) add(d Document) error {
	src := d.src
	if src != nil && src.format != s.f {
		src = nil
	}
	if d.Object == nil && (src == nil || !bytes.Equal(src.read, nullJSON)) {
		return nil
	}
	now, err := canonical(d.Object)
	if err != nil {
		return err
	}
	if src != nil && bytes.Equal(now, src.read) {
		s.read(src, src.body)
		return nil
	}
	body, err := s.changed(d, src, now)
	if err != nil {
		return err
	}
	if src != nil {
		s.read(src, body)
	} else {
		s.fresh(body)
	}
	return nil
}

// changed is the text of a document whose object changed, or that was not read in s.f.
func (s *stream) changed(d Document, src *source, now []byte) ([]byte, error) {
	if s.f == YAML {
		return yamlDocument(src, now)
	}
	j, err := indented(d.Object)
	if src != nil {
		j = bytes.TrimSuffix(j, []byte("\n")) // the white space around it is the input's
	}
	return j, err
}

// read writes the document body, which was read from src, between what came before and
// after it in the input.
func (s *stream) read(src *source, body []byte) {
	if s.f == YAML && s.b.Len() > 0 {
		s.newline()
		if len(src.pre) == 0 { // the first document of its stream, not first here
			s.b.WriteString("---\n")
		}
	}
	s.b.Write(src.pre)
	s.b.Write(body)
	s.b.Write(src.post)
}

// fresh writes a document that was not read.
func (s *stream) fresh(body []byte) {
	if s.f == YAML && s.b.Len() > 0 {
		s.newline()
		s.b.WriteString("---\n")
	}
	s.b.Write(body)
}

// newline ends the last line, for a separator to follow: an input's last document may end
// without one.
func (s *stream) newline() {
	if b := s.b.Bytes(); len(b) > 0 && b[len(b)-1] != '\n' {
		s.b.WriteByte('\n')
	}
}

// indented is v as JSON, indented by two spaces, HTML left as it is, with a final newline.
func indented(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	err := enc.Encode(v)
	return b.Bytes(), err
}
