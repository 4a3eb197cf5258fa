//go:build unix && !aix

package deliver

import (
	"net"
	"syscall"
)

// plainSupported says plainClient serves http:// targets on this platform.
const plainSupported = true

// plainAlive reports whether an idle connection can carry a request: the
// target has not closed it and sent nothing on it since its last answer.
// It peeks at the socket without waiting (one recv system call).
func plainAlive(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var buf [1]byte
	alive := false
	err = rc.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// Nothing to read yet is the one state of a live idle connection;
		// 0 bytes is the target's close, and any byte an answer nobody asked for.
		alive = rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && alive
}
