package lint

import (
	"testing"

	"github.com/sidesync/sidesync/internal/detect"
)

// TestFlagValue reads flags as detection does (internal/detect, flagValue).
func TestFlagValue(t *testing.T) {
	tests := []struct {
		args      []string
		name      string
		wantValue string
		wantOn    bool
	}{
		{[]string{"--quitquitquit"}, "quitquitquit", "", true},
		{[]string{"-quitquitquit"}, "quitquitquit", "", true},
		{[]string{"--quitquitquit=true"}, "quitquitquit", "true", true},
		{[]string{"--quitquitquit=false"}, "quitquitquit", "false", false},
		{[]string{"--admin-port", "9192"}, "admin-port", "9192", true},
		{[]string{"--admin-port=9192"}, "admin-port", "9192", true},
		{[]string{"--admin-port", "--debug"}, "admin-port", "", true},
		{[]string{"--quitquitquit-later"}, "quitquitquit", "", false},
		{[]string{"project:region:db"}, "quitquitquit", "", false},
		{nil, "health-check", "", false},
	}
	for _, tt := range tests {
		v, on := flagValue(tt.args, tt.name)
		if v != tt.wantValue || on != tt.wantOn {
			t.Errorf("flagValue(%q, %q) = %q, %v; want %q, %v", tt.args, tt.name, v, on, tt.wantValue, tt.wantOn)
		}
	}
}

// TestContainerProfile recognises containers by the detection table's names and images.
func TestContainerProfile(t *testing.T) {
	tests := []struct {
		name, image, want string
	}{
		{"istio-proxy", "docker.io/istio/proxyv2:1.27.0", "istio"},
		{"linkerd-proxy", "cr.l5d.io/linkerd/proxy:edge-26.8.3", "linkerd"},
		{"db", "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.1", "cloudsql"},
		{"db", "GCR.IO/CLOUDSQL-DOCKER/CLOUDSQL-PROXY:1.33", "cloudsql"},
		{"db", "example/cloud_sql_proxy", "cloudsql"},
		{"envoy", "public.ecr.aws/appmesh/aws-appmesh-envoy:v1.29", "appmesh"},
		{"envoy", "envoyproxy/envoy:v1.31", ""},
		{"job", "example/report", ""},
	}
	for _, tt := range tests {
		got, ok := containerProfile(tt.name, tt.image)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("containerProfile(%q, %q) = %q, %v; want %q", tt.name, tt.image, got, ok, tt.want)
		}
	}
}

// TestProfileInfosComplete: every profile detection can find has a row here, with a title, and
// every row here is a profile of the detection table; a profile that an annotation can announce
// has a container name to show.
func TestProfileInfosComplete(t *testing.T) {
	infos := profileInfos()
	for _, s := range detect.Signatures() {
		info, ok := infos[s.Profile]
		switch {
		case s.Undetectable != "" && ok:
			t.Errorf("profile %q cannot be detected, but lint has a row for it", s.Profile)
		case s.Undetectable == "" && (!ok || info.title == ""):
			t.Errorf("profile %q: no row with a title in profileInfos", s.Profile)
		case (len(s.Marks) > 0 || len(info.requests) > 0) && s.Container == "":
			t.Errorf("profile %q can be announced by an annotation, but the table names no container for it", s.Profile)
		}
	}
	for name := range infos {
		if _, ok := detect.LookupSignature(name); !ok {
			t.Errorf("profileInfos has %q, which is no profile of the detection table", name)
		}
	}
}
