// Package units formats and parses the byte sizes and rates that clrdiag
// shows people, in one convention for the whole CLI and the monitor: SI
// decimal prefixes, as Prometheus and the monitor's dashboard use (1 kB =
// 1000 B, 1 MB = 10^6 B, 1 GB = 10^9 B; rates in B/s, kB/s, MB/s).
//
// A value that must stay binary (the runtime's circular buffer, which the
// Diagnostic IPC protocol counts in units of 2^20 bytes) is labelled with an
// IEC prefix (KiB, MiB, GiB) where it is shown. ParseBytes reads both: "500MB"
// is 500,000,000 bytes and "500MiB" 524,288,000.
package units
