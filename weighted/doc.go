// Package weighted is the model every export format writes, a profile as
// weighted stacks, and the formats: speedscope, Chromium trace-event JSON,
// pprof and folded stacks, one file each.
//
//	format, _ := weighted.LookupFormat("pprof")
//	wp, _ := p.Weighted(profile.MeasureWall) // or a heap snapshot's
//	err := format.Write(out, wp)
//
// A Profile is frames, stacks, groups (threads) of samples with one value
// per sample type, and optional time-ordered runs. It does not depend on
// where the stacks came from: package profile gives one for each measure
// of a trace (wall, cpu, alloc, contention, exceptions), package gcdump
// one for a heap snapshot. Formats lists the formats (name, file suffix,
// whether they need a timeline, writer): adding one is adding an entry
// there and its writer, func(io.Writer, *Profile) error, in a file of its
// own.
//
// The writers append into one buffer and flush it in large writes, encode
// pprof's protocol buffer directly (Profile.Pprof builds the same profile
// with github.com/google/pprof/profile, which the tests hold it to), and
// read a Timeline's compact runs in place (internal/timeline). Every
// writer's output depends only on the Profile: the same profile gives the
// same bytes.
//
// # Concurrency
//
// The writers do not modify the Profile, and may run concurrently on it.
// The package has no global state.
//
// Stability: part of the public API (README: Stability): changed with care,
// the release notes say how.
package weighted
