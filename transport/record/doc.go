// Package record saves the connections of a transport.Dialer to files and
// serves them back: clrdiag's --record-ipc and --replay-ipc.
//
// A transport.Dialer with a Recorder saves every byte each connection writes and
// reads, in order, with timestamps, one file per connection (conn-0001.rec,
// ...). Replay serves such a directory back: its Dial returns the recorded
// connections in order, checks that the client writes what it wrote then
// (a *MismatchError names the first differing offset), and returns the
// recorded replies, each only after the client has written what preceded it.
// A bug seen in the field can thus be reproduced without the process. The
// file format is described in record.go; recordings can hold environment
// variables and command lines of the target, so treat them as sensitive.
//
// Requests that hold ids chosen at random (counters' session and client
// ids) would differ in a replay: an IDLog saves them with the recording
// (RecordIDs, in IDsFile) and gives them back in order (ReplayIDs).
//
// # Concurrency
//
// Recorder, ReplayDialer and IDLog are safe for concurrent use by many
// connections. Each returned net.Conn follows the net.Conn rules: one
// reader and one writer may run concurrently, Close unblocks both, and
// deadlines apply (replayed connections honour them too). The package has
// no package-level mutable state.
//
// Stability: part of the public API (README: Stability): changed with care,
// the release notes say how.
package record
