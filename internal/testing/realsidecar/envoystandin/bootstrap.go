package main

import (
	"encoding/json"
	"net"
	"strconv"
)

// bootstrap is the part of Envoy's bootstrap (the JSON the agent renders from
// tools/packaging/common/envoy_bootstrap.json) that the stand-in reads.
type bootstrap struct {
	Admin struct {
		Address address `json:"address"`
	} `json:"admin"`
	Static struct {
		Clusters []struct {
			Name string `json:"name"`
			Load struct {
				Endpoints []struct {
					LB []struct {
						Endpoint struct {
							Address address `json:"address"`
						} `json:"endpoint"`
					} `json:"lb_endpoints"`
				} `json:"endpoints"`
			} `json:"load_assignment"`
		} `json:"clusters"`
		Listeners []listener `json:"listeners"`
	} `json:"static_resources"`
}

// listener is a static listener: its address, and the whole of it for routesTo.
type listener struct {
	Address address
	Raw     json.RawMessage
}

func (l *listener) UnmarshalJSON(b []byte) error {
	var v struct {
		Address address `json:"address"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	l.Address, l.Raw = v.Address, append(json.RawMessage(nil), b...)
	return nil
}

type address struct {
	Socket struct {
		Address string `json:"address"`
		Port    int    `json:"port_value"`
	} `json:"socket_address"`
}

func (a address) hostPort() string {
	if a.Socket.Address == "" {
		return ""
	}
	return net.JoinHostPort(a.Socket.Address, strconv.Itoa(a.Socket.Port))
}

// routesTo reports whether a listener has a route {"match":{"prefix":prefix},
// "route":{"cluster":cluster}} anywhere in its filter chains.
func routesTo(raw json.RawMessage, prefix, cluster string) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	return findRoute(v, prefix, cluster)
}

func findRoute(v any, prefix, cluster string) bool {
	switch v := v.(type) {
	case map[string]any:
		m, _ := v["match"].(map[string]any)
		r, _ := v["route"].(map[string]any)
		if m != nil && r != nil && m["prefix"] == prefix && r["cluster"] == cluster {
			return true
		}
		for _, e := range v {
			if findRoute(e, prefix, cluster) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if findRoute(e, prefix, cluster) {
				return true
			}
		}
	}
	return false
}
