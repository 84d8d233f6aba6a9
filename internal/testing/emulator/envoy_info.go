package emulator

import (
	"encoding/json"
	"fmt"
	"net/url"
	"time"
)

// The emulated Envoy build, as /server_info and /hot_restart_version
// report it (values from a real 1.37.2 answer, ref §1.4).
const (
	envoyVersion           = "0000000000000000000000000000000000000000/1.37.2/Clean/RELEASE/BoringSSL"
	envoyHotRestartVersion = "11.104"
)

// envoyServerInfo is envoy.admin.v3.ServerInfo in Envoy's field order
// (ref §1.4). "state" has no omitempty: Envoy prints it even for LIVE,
// the enum's zero value, and App Mesh's probe relies on that (ref §9).
type envoyServerInfo struct {
	Version            string            `json:"version"`
	State              string            `json:"state"`
	UptimeCurrentEpoch string            `json:"uptime_current_epoch"`
	UptimeAllEpochs    string            `json:"uptime_all_epochs"`
	HotRestartVersion  string            `json:"hot_restart_version"`
	CommandLineOptions envoyCommandLine  `json:"command_line_options"`
	Node               map[string]string `json:"node"`
}

// envoyCommandLine is the part of CommandLineOptions a client might read;
// drain_time and parent_shutdown_time are Envoy's defaults (ref §1.4).
type envoyCommandLine struct {
	BaseID             string `json:"base_id"`
	Concurrency        int    `json:"concurrency"`
	ConfigPath         string `json:"config_path"`
	LogLevel           string `json:"log_level"`
	ServiceCluster     string `json:"service_cluster"`
	ServiceNode        string `json:"service_node"`
	FileFlushInterval  string `json:"file_flush_interval"`
	DrainTime          string `json:"drain_time"`
	ParentShutdownTime string `json:"parent_shutdown_time"`
	Mode               string `json:"mode"`
	DisableHotRestart  bool   `json:"disable_hot_restart"`
	RestartEpoch       int    `json:"restart_epoch"`
	DrainStrategy      string `json:"drain_strategy"`
}

// serverInfo answers /server_info: always 200, pretty JSON with a one-space
// indent as Envoy prints it, whatever the state (ref §1.4).
func (e *envoyAdmin) serverInfo(*Request) Reply {
	uptime := fmt.Sprintf("%ds", int64(time.Since(e.started)/time.Second))
	info := envoyServerInfo{
		Version:            envoyVersion,
		State:              e.sc.State(),
		UptimeCurrentEpoch: uptime,
		UptimeAllEpochs:    uptime,
		HotRestartVersion:  envoyHotRestartVersion,
		CommandLineOptions: envoyCommandLine{
			BaseID:             "0",
			Concurrency:        2,
			ConfigPath:         "/etc/envoy/envoy.yaml",
			LogLevel:           "info",
			FileFlushInterval:  "10s",
			DrainTime:          "600s",
			ParentShutdownTime: "900s",
			Mode:               "Serve",
			DrainStrategy:      "Gradual",
		},
		Node: map[string]string{"id": "sidesync-emulator", "cluster": "sidesync", "user_agent_name": "envoy"},
	}
	body, err := json.MarshalIndent(info, "", " ")
	if err != nil {
		return Reply{Response: Text(500, err.Error())}
	}
	return jsonReply(string(body) + "\n")
}

func jsonReply(body string) Reply {
	return Reply{Response: Response{
		Status: 200,
		Header: []Field{{"content-type", jsonType}},
		Body:   []byte(body),
	}}
}

// staticJSON answers with a fixed JSON body.
func staticJSON(body string) Handler {
	return func(*Request) Reply { return jsonReply(body) }
}

// staticText answers 200 with a fixed body and the fallback content type.
func staticText(body string) Handler {
	return func(*Request) Reply { return Reply{Response: Text(200, body)} }
}

// envoyMinorRoutes complete Envoy's handler table (ref §1.1) so that
// routing, the POST rule and the help text match the real one. Their
// answers are plausible placeholders for an Envoy with no clusters,
// listeners or certificates; sidesync does not read them.
func envoyMinorRoutes() []Route {
	post := []string{"POST"}
	return []Route{
		{Path: "/", Help: "Admin home page", Handle: staticText("envoy admin (emulated): see /help\n")},
		{Path: "/certs", Help: "print certs on machine", Handle: staticJSON("{\n \"certificates\": []\n}\n")},
		{Path: "/clusters", Help: "upstream cluster status", Handle: staticText("")},
		{Path: "/config_dump", Help: "dump current Envoy configs (experimental)", Handle: staticJSON("{\n \"configs\": []\n}\n")},
		{Path: "/init_dump", Help: "dump current Envoy init manager information (experimental)", Handle: staticJSON("{\n \"unready_targets_dumps\": []\n}\n")},
		{Path: "/contention", Help: "dump current Envoy mutex contention stats (if enabled)", Handle: staticText("Mutex contention tracing is not enabled. To enable, run Envoy with flag --enable-mutex-tracing.")},
		{Path: "/cpuprofiler", Methods: post, Help: "enable/disable the CPU profiler", Handle: envoyOK},
		{Path: "/heapprofiler", Methods: post, Help: "enable/disable the heap profiler", Handle: envoyOK},
		{Path: "/heap_dump", Help: "dump current Envoy heap (if supported)", Handle: staticText("")},
		{Path: "/hot_restart_version", Help: "print the hot restart compatibility version", Handle: staticText(envoyHotRestartVersion)},
		{Path: "/logging", Methods: post, Help: "query/change logging levels", Handle: envoyOK},
		{Path: "/memory", Help: "print current allocation/heap usage", Handle: staticJSON("{\n \"allocated\": \"0\",\n \"heap_size\": \"0\"\n}\n")},
		{Path: "/reset_counters", Methods: post, Help: "reset all counters to zero", Handle: envoyOK},
		{Path: "/stats/recentlookups", Help: "Show recent stat-name lookups", Handle: staticText("")},
		{Path: "/stats/recentlookups/clear", Methods: post, Help: "clear list of stat-name lookups and counter", Handle: envoyOK},
		{Path: "/stats/recentlookups/disable", Methods: post, Help: "disable recording of reset stat-name lookup names", Handle: envoyOK},
		{Path: "/stats/recentlookups/enable", Methods: post, Help: "enable recording of reset stat-name lookup names", Handle: envoyOK},
		{Path: "/listeners", Help: "print listener info", Handle: staticText("")},
		{Path: "/runtime", Help: "print runtime values", Handle: staticJSON("{\n \"entries\": {},\n \"layers\": []\n}\n")},
		{Path: "/runtime_modify", Methods: post, Help: "Adds or modifies runtime values as passed in query parameters. To delete a previously added key, use an empty string as the value. Note that deletion only applies to overrides added via this endpoint; values loaded from disk can be modified via override but not deleted. E.g. ?key1=value1&key2=value2...", Handle: envoyOK},
		{Path: "/reopen_logs", Methods: post, Help: "reopen access logs", Handle: envoyOK},
	}
}

// queryValue returns the first value of key in a raw query, "" when it is
// absent or the query is malformed.
func queryValue(rawQuery, key string) string {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return ""
	}
	return q.Get(key)
}
