//go:build !linux

package transport

import "net"

// checkPeer is a no-op outside Linux: discovery there does not set
// Endpoint.CheckPeer, and a caller that sets it gets no check.
func checkPeer(net.Conn, Endpoint) error { return nil }
