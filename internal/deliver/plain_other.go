//go:build !unix || aix

package deliver

import "net"

// plainSupported says plainClient serves http:// targets on this platform:
// not here, where plainAlive cannot peek at a socket; net/http's Transport
// serves them.
const plainSupported = false

// plainAlive is not used where plainSupported is false.
func plainAlive(net.Conn) bool { return false }
