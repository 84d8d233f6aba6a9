package profiles_test

import (
	"fmt"

	"github.com/sidesync/sidesync/sidecar/profiles"
)

func ExampleGet() {
	linkerd, _ := profiles.Get("linkerd")
	moved := linkerd.WithPorts(4192, 4192)
	fmt.Println(linkerd.Ready.URL)
	fmt.Println(moved.Quit.URL)
	// Output:
	// http://127.0.0.1:4191/ready
	// http://127.0.0.1:4192/shutdown
}
