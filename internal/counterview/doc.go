// Package counterview is the terminal view of clrdiag counters monitor: the
// latest value of every counter as a table grouped by provider, redrawn in
// place on a terminal or printed as lines of changes otherwise, the way
// dotnet-counters monitor shows them. It reads package counters' samples;
// names, units and tags from the target are escaped for the terminal
// (internal/termsafe).
//
// It belongs to the CLI, not to the counters library.
package counterview
