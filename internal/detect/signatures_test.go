package detect

import (
	"flag"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sidesync/sidesync/internal/gendoc"
	"github.com/sidesync/sidesync/sidecar"
)

var update = flag.Bool("update", false, "rewrite README.md's generated detection table from Signatures")

// TestREADMEDetection: the README's detection table is Signatures rendered (go generate
// ./internal/detect).
func TestREADMEDetection(t *testing.T) {
	gendoc.Check(t, "../../README.md", "detection", renderSignatures(Signatures()), "go generate ./internal/detect", *update)
}

// renderSignatures is the README's table of what detection reads.
func renderSignatures(sigs []Signature) string {
	var b strings.Builder
	b.WriteString("<!-- generated from internal/detect/signatures.go by `go generate ./internal/detect`: edit the table there -->\n")
	b.WriteString("| profile | pod annotation or label (1, 2) | port from | container in the Pod (2) | also reads |\n| --- | --- | --- | --- | --- |\n")
	b.WriteString("| any | `" + SidecarsAnnotation + "`: a list in the syntax of `--sidecar`, written by `kubectl sidesync inject` | its own `port=`, `ready-port=`, `quit-port=` |  | " +
		"wins over the rows below for the profiles it names; an entry that cannot be read is a warning, and the others still count |\n")
	for _, s := range sigs {
		cells := []string{"`" + s.Profile + "`", renderMarks(s), renderPort(s.Port), renderContainers(s), s.Reads}
		if s.Undetectable != "" {
			cells = []string{cells[0], "not detected: " + s.Undetectable, "", "", ""}
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String() + "\n" // the blank line ends the table before the end marker
}

func renderMarks(s Signature) string {
	text := func(ms []Mark) string {
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
	if len(s.Unless) == 0 {
		return text(s.Marks)
	}
	return text(s.Marks) + ", unless " + text(s.Unless)
}

func renderPort(p PortAnnotation) string {
	switch {
	case p.Key == "":
		return ""
	case p.QuitOnly:
		return "`" + p.Key + "` (quit call only)"
	}
	return "`" + p.Key + "`"
}

func renderContainers(s Signature) string {
	var out, images []string
	for _, c := range s.Containers {
		switch {
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
	text := orList(out)
	if s.Container != "" && !slices.ContainsFunc(s.Containers, func(c ContainerMatch) bool { return c.Name == s.Container && c.Image == "" }) {
		if text != "" {
			text += "; "
		}
		text += "`" + s.Container + "`, read once a mark names the profile"
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

// TestSignatures: the table has one row per profile and no other, each row says how the
// profile is found or why it cannot be, and no two rows claim the same mark or container name.
func TestSignatures(t *testing.T) {
	sigs := Signatures()
	var profiles []string
	for _, s := range sigs {
		profiles = append(profiles, s.Profile)
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(sidecar.ProfileNames())), slices.Sorted(slices.Values(profiles))); diff != "" {
		t.Errorf("detection rows vs sidecar.ProfileNames() (-profiles +rows):\n%s", diff)
	}
	marks, names := make(map[string]string), make(map[string]string)
	for _, s := range sigs {
		detectable := len(s.Marks) > 0 || len(s.Containers) > 0
		switch {
		case s.Undetectable != "" && (detectable || len(s.Unless) > 0 || s.Port != (PortAnnotation{}) || s.Container != "" ||
			s.Reads != "" || s.fromMarks != nil || s.fromContainer != nil):
			t.Errorf("%s is undetectable, yet its row says how to detect it", s.Profile)
		case s.Undetectable == "" && !detectable:
			t.Errorf("%s has neither a mark nor a container that reveals it: fill them in, or say why in Undetectable", s.Profile)
		case len(s.Marks) == 0 && (s.Port.Key != "" || s.Container != "" || s.fromMarks != nil):
			t.Errorf("%s has no mark, so its port annotation, container and mark function are never read", s.Profile)
		case (s.fromMarks != nil || s.fromContainer != nil) && s.Reads == "":
			t.Errorf("%s has a function of its own: say what it reads in Reads, for the README", s.Profile)
		}
		for _, m := range s.Marks {
			if other, dup := marks[m.String()]; dup {
				t.Errorf("%s and %s share the mark %s", other, s.Profile, m)
			}
			marks[m.String()] = s.Profile
		}
		for _, c := range s.Containers {
			if other, dup := names[c.Name]; dup && c.Name != "" && c.Image == "" {
				t.Errorf("%s and %s are both revealed by a container named %s", other, s.Profile, c.Name)
			}
			if c.Image == "" {
				names[c.Name] = s.Profile
			}
		}
		if _, ok := LookupSignature(s.Profile); !ok {
			t.Errorf("LookupSignature(%q) found nothing", s.Profile)
		}
	}
}

// TestContainerSignature: a container is recognised by its name or its image, and names win
// over images, as the order of Signatures has it.
func TestContainerSignature(t *testing.T) {
	tests := []struct {
		name, image, want string
	}{
		{"istio-proxy", "docker.io/istio/proxyv2:1.28", "istio"},
		{"daprd", "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2", "dapr"},
		{"db", "GCR.IO/CLOUDSQL-DOCKER/GCE-PROXY/CLOUD_SQL_PROXY:1.33", "cloudsql"},
		{"sql", "gcr.io/cloudsql-docker/gce-proxy:1.33 cloudsql-proxy", "cloudsql"},
		{"proxy", "gcr.io/cloudsql-docker/gce-proxy:1.37.0", "cloudsql"}, // v1
		{"envoy", "840364872350.dkr.ecr.us-west-2.amazonaws.com/aws-appmesh-envoy:v1.29", "appmesh"},
		{"envoy", "envoyproxy/envoy:v1.31", ""},
		{"app", "example/appmesh-demo", ""},
		{"job", "example/job", ""},
	}
	for _, tt := range tests {
		s, ok := containerSignature(container{Name: tt.name, Image: tt.image})
		if got := s.Profile; got != tt.want || ok != (tt.want != "") {
			t.Errorf("container %s (%s): %q, %v; want %q", tt.name, tt.image, got, ok, tt.want)
		}
	}
}
