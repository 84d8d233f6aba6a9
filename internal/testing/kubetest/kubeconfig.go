//go:build linux

package kubetest

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Kubeconfig writes a kubeconfig for the cluster, with a bearer token (AdminToken, a Token, a
// ServiceAccountToken), into the test's temporary directory and returns its path: what a
// program under test (kubectl sidesync, a controller) is given with --kubeconfig.
func (c *Cluster) Kubeconfig(t testing.TB, token string) string {
	t.Helper()
	return writeKubeconfig(t, c.URL, c.CAFile, token)
}

// Kubeconfig is the cluster's Kubeconfig for a program that runs on the machine, outside the
// node's network namespace: its server is a loopback address of the machine that forwards
// every connection to the node's API server (the same certificate: it is valid for loopback).
func (n *Node) Kubeconfig(t testing.TB, token string) string {
	t.Helper()
	url, err := n.forwardAPI()
	if err != nil {
		t.Fatalf("kubetest: forwarding the node's API server: %v", err)
	}
	return writeKubeconfig(t, url, n.CAFile, token)
}

func writeKubeconfig(t testing.TB, server, caFile, token string) string {
	name := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(name, []byte(kubeconfig(server, caFile, token)), 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

// forwarder is the node's API forwarder, started once.
type forwarder struct {
	once sync.Once
	url  string
	err  error
	l    net.Listener
}

// forwardAPI starts, once, a listener on the machine's loopback that forwards each connection
// to the API server in the node's network namespace; Stop closes it.
func (n *Node) forwardAPI() (string, error) {
	f := &n.forward
	f.once.Do(func() {
		_, port, err := net.SplitHostPort(n.URL[len("https://"):])
		if err != nil {
			f.err = err
			return
		}
		if f.l, f.err = net.Listen("tcp", "127.0.0.1:0"); f.err != nil {
			return
		}
		f.url = "https://" + f.l.Addr().String()
		go func() {
			for {
				c, err := f.l.Accept()
				if errors.Is(err, net.ErrClosed) {
					return
				}
				if err != nil {
					continue
				}
				go func() {
					defer c.Close()
					up, err := n.DialContext(context.Background(), "tcp", net.JoinHostPort("127.0.0.1", port))
					if err != nil {
						return
					}
					defer up.Close()
					done := make(chan struct{}, 2)
					go func() { io.Copy(up, c); done <- struct{}{} }()
					go func() { io.Copy(c, up); done <- struct{}{} }()
					<-done
				}()
			}
		}()
	})
	return f.url, f.err
}
