// Package netaddr turns the address a server listens on into the base URL
// a browser on the same machine reaches it by. It is shared by package
// monitor (the dashboard link) and package viewer (the flame graph link),
// which do not import each other.
package netaddr
