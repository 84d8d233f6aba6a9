package sidecar

import "strconv"

//go:generate go test -run TestREADMEProfiles -update

// ProfileDoc is what the documentation says about one profile: a row of the README's profile
// table. ReadyWhen and QuitWith are derived from the profile's Check and Call, so they cannot
// drift from what sidesync does; the texts are Markdown (code in backticks), one line each.
type ProfileDoc struct {
	Name      string
	ReadyWhen string // "`GET http://127.0.0.1:4191/ready` answers 2xx", "nothing to wait for"
	QuitWith  string // "`POST http://127.0.0.1:4191/shutdown`", "(none)"
	Notes     string // what the user must know to make the profile work; never empty
}

// ProfileDocs lists the documentation of every profile, in the order of ProfileNames.
func ProfileDocs() []ProfileDoc {
	var docs []ProfileDoc
	for _, p := range profiles() {
		docs = append(docs, p.doc())
	}
	return docs
}

// DescribeProfile returns the documentation of the profile called name, and whether there is
// such a profile.
func DescribeProfile(name string) (ProfileDoc, bool) {
	for _, p := range profiles() {
		if p.Name == name {
			return p.doc(), true
		}
	}
	return ProfileDoc{}, false
}

func (p profile) doc() ProfileDoc {
	d := ProfileDoc{Name: p.Name, ReadyWhen: p.readyWhen, QuitWith: p.quitWith, Notes: p.notes}
	if d.ReadyWhen == "" {
		d.ReadyWhen = describeCheck(p.Ready)
	}
	if d.QuitWith == "" {
		d.QuitWith = describeCall(p.Quit)
	}
	return d
}

// describeCheck says in one line when c counts a sidecar as ready.
func describeCheck(c *Check) string {
	if c == nil {
		return "nothing to wait for"
	}
	switch c.Kind {
	case EnvoyAdmin:
		return "`GET " + c.URL + "/ready` answers 200 (`LIVE`)"
	case TCP:
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
func describeCall(c *Call) string {
	if c == nil {
		return "(none)"
	}
	method := c.Method
	if method == "" {
		method = "POST"
	}
	return "`" + method + " " + c.URL + "`"
}
