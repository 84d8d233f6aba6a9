package catalog

import (
	"flag"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sidesync/sidesync/internal/shared/contract"
	"github.com/sidesync/sidesync/internal/testing/gendoc"
	"github.com/sidesync/sidesync/sidecar"
)

var update = flag.Bool("update", false, "rewrite README.md's generated tables from the catalog")

const regenerate = "go generate ./internal/shared/catalog"

// TestREADME: the README's tables of profiles, of what detection reads, and of the containers
// left to their orchestrator are the catalog rendered, so that a row added or changed shows in
// the README.
func TestREADME(t *testing.T) {
	gendoc.Check(t, "../../../README.md", "profiles", renderProfiles(), regenerate, *update)
	gendoc.Check(t, "../../../README.md", "detection", renderDetection(), regenerate, *update)
	gendoc.Check(t, "../../../README.md", "orchestrators", renderOrchestrators(), regenerate, *update)
}

const generated = "<!-- generated from internal/shared/catalog by `" + regenerate + "`: edit the rows there -->\n"

// renderProfiles is the README's table of profiles.
func renderProfiles() string {
	var b strings.Builder
	b.WriteString(generated)
	b.WriteString("| profile | ready when | quit with | notes |\n| --- | --- | --- | --- |\n")
	for _, e := range profileRows() {
		ready, quit := e.ReadyWhen, e.QuitWith
		if !e.Generic() {
			ready, quit = describeCheck(e.Sidecar.Ready), describeCall(e.Sidecar.Quit)
		}
		b.WriteString("| `" + e.Name + "` | " + ready + " | " + quit + " | " + e.Notes + " |\n")
	}
	return b.String() + "\n" // the blank line ends the table before the end marker
}

func profileRows() []Entry {
	return slices.DeleteFunc(Entries(), func(e Entry) bool { return !e.IsProfile() })
}

// describeCheck says in one line when c counts a sidecar as ready.
func describeCheck(c *sidecar.Check) string {
	if c == nil {
		return "nothing to wait for"
	}
	switch c.Kind {
	case sidecar.EnvoyAdmin:
		return "`GET " + c.URL + "/ready` answers 200 (`LIVE`)"
	case sidecar.TCP:
		return "`" + c.URL + "` accepts a connection"
	}
	method, answer := c.Method, "2xx"
	if method == "" {
		method = "GET"
	}
	if c.Status != 0 {
		answer = strconv.Itoa(c.Status)
	}
	return "`" + method + " " + c.URL + "` answers " + answer
}

// describeCall says in one line how c asks a sidecar to quit.
func describeCall(c *sidecar.Call) string {
	if c == nil {
		return "(none)"
	}
	method := c.Method
	if method == "" {
		method = "POST"
	}
	return "`" + method + " " + c.URL + "`"
}

// renderDetection is the README's table of what detection reads.
func renderDetection() string {
	var b strings.Builder
	b.WriteString(generated)
	b.WriteString("| profile | pod annotation or label (1, 2) | port from | container in the Pod (2) | also reads |\n| --- | --- | --- | --- | --- |\n")
	b.WriteString("| any | `" + contract.SidecarsAnnotation + "` (yours) and `" + contract.FoundAnnotation + "` (written by `kubectl sidesync inject`): lists in the syntax of `--sidecar` | their own `port=`, `ready-port=`, `quit-port=` |  | " +
		"win over the rows below for the profiles they name, yours over inject's; an entry that cannot be read is a warning, and the others still count |\n")
	for _, e := range profileRows() {
		cells := []string{"`" + e.Name + "`", renderMarks(e), renderPorts(e), renderContainers(e), e.Reads}
		if e.Undetectable != "" {
			cells = []string{cells[0], "not detected: " + e.Undetectable, "", "", ""}
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String() + "\n"
}

// renderOrchestrators is the README's table of the containers an orchestrator stops itself.
func renderOrchestrators() string {
	var b strings.Builder
	b.WriteString(generated)
	b.WriteString("| container | stopped by |\n| --- | --- |\n")
	for _, e := range Entries() {
		if !e.IsProfile() {
			b.WriteString("| " + matchesText(e.Containers) + " (" + e.Title + ") | " + e.StoppedBy + " |\n")
		}
	}
	return b.String() + "\n"
}

func marksText(ms []Mark) string {
	var out []string
	for _, m := range ms {
		c := "`" + m.Key + "`"
		if m.Value != "" {
			c = "`" + m.Key + ": " + m.Value + "`"
		}
		if m.Label {
			c = "label " + c
		}
		out = append(out, c)
	}
	return orList(out)
}

func renderMarks(e Entry) string {
	if len(e.Unless) == 0 {
		return marksText(e.Marks)
	}
	return marksText(e.Marks) + ", unless " + marksText(e.Unless)
}

// renderPorts says what moves the profile's ports.
func renderPorts(e Entry) string {
	text := func(srcs []Source) string {
		var out []string
		for _, s := range srcs {
			switch {
			case s.Annotation != "":
				out = append(out, "`"+s.Annotation+"`")
			case s.Flag != "":
				out = append(out, "`--"+s.Flag+"`")
			default:
				out = append(out, "`"+s.Env+"`")
			}
		}
		return orList(out)
	}
	ready, quit := text(e.ReadyPort), text(e.QuitPort)
	switch {
	case ready == quit:
		return ready
	case ready == "":
		return quit + " (quit call only)"
	case quit == "":
		return ready + " (readiness only)"
	}
	return "readiness: " + ready + "; quit: " + quit
}

func matchesText(ms []Match) string {
	var out, images []string
	for _, c := range ms {
		switch {
		case c.NamePrefix != "" && c.When != nil:
			out = append(out, "`"+c.NamePrefix+"*` in a pod with "+c.When.String())
		case c.Name != "" && c.Image != "":
			out = append(out, "`"+c.Name+"` with an image containing `"+c.Image+"`")
		case c.Name != "":
			out = append(out, "`"+c.Name+"`")
		default:
			images = append(images, "`"+c.Image+"`")
		}
	}
	if len(images) > 0 {
		out = append(out, "an image containing "+orList(images))
	}
	return orList(out)
}

func renderContainers(e Entry) string {
	text := matchesText(e.Containers)
	if e.Container != "" && !slices.ContainsFunc(e.Containers, func(c Match) bool { return c.Name == e.Container && c.Image == "" }) {
		if text != "" {
			text += "; "
		}
		text += "`" + e.Container + "`, read once a mark names the profile"
	}
	return text
}

// orList is "a", "a or b", "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// TestProfileDocs: every profile is documented, and a generic profile (one without endpoints of
// its own) says what the user gives, since nothing can be derived; no text breaks a table.
func TestProfileDocs(t *testing.T) {
	for _, e := range Entries() {
		if !e.IsProfile() {
			continue
		}
		if e.Notes == "" {
			t.Errorf("%s: no notes", e.Name)
		}
		if e.Sidecar.Ready == nil && e.Sidecar.Quit == nil && (e.ReadyWhen == "" || e.QuitWith == "") {
			t.Errorf("%s has no endpoints: its row must say what the user gives (ReadyWhen, QuitWith)", e.Name)
		}
		all := e.ReadyWhen + e.QuitWith + e.Notes + e.Reads
		if strings.ContainsAny(all, "|\n") {
			t.Errorf("%s: a documentation text has a | or a line break, which would break the README's table", e.Name)
		}
	}
}

func TestDescribeEndpoints(t *testing.T) {
	tests := []struct {
		name        string
		check       *sidecar.Check
		call        *sidecar.Call
		ready, quit string
	}{
		{"none", nil, nil, "nothing to wait for", "(none)"},
		{"envoy", &sidecar.Check{Kind: sidecar.EnvoyAdmin, URL: "http://127.0.0.1:9901"}, &sidecar.Call{URL: "http://127.0.0.1:9901/quitquitquit"},
			"`GET http://127.0.0.1:9901/ready` answers 200 (`LIVE`)", "`POST http://127.0.0.1:9901/quitquitquit`"},
		{"any 2xx", &sidecar.Check{URL: "http://127.0.0.1:1/h"}, &sidecar.Call{URL: "http://127.0.0.1:1/q", Method: "PUT"},
			"`GET http://127.0.0.1:1/h` answers 2xx", "`PUT http://127.0.0.1:1/q`"},
		{"one status", &sidecar.Check{URL: "http://127.0.0.1:1/h", Method: "HEAD", Status: 204}, nil, "`HEAD http://127.0.0.1:1/h` answers 204", "(none)"},
		{"tcp", &sidecar.Check{Kind: sidecar.TCP, URL: "tcp://127.0.0.1:5432"}, nil, "`tcp://127.0.0.1:5432` accepts a connection", "(none)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describeCheck(tt.check); got != tt.ready {
				t.Errorf("describeCheck = %q, want %q", got, tt.ready)
			}
			if got := describeCall(tt.call); got != tt.quit {
				t.Errorf("describeCall = %q, want %q", got, tt.quit)
			}
		})
	}
}
