// Package testcapture gives tests the real trace files they decode.
//
// The small captures whose licence allows it are committed under
// testdata/captures/ at the module root (see its README.md for each file's
// source repository, commit and licence), so the tests that use them run in
// any clone. The others — too large, or without a licence that allows
// redistribution — are read from the directory named by the environment
// variable CLRDIAG_CAPTURES (a copy of the shared captures, with the same
// layout); without it the tests that need them skip. scripts/test.sh sets
// CLRDIAG_CAPTURES to ../shared/captures when that directory exists.
//
// A committed file that is missing or altered fails the test. An external
// file that is missing although CLRDIAG_CAPTURES is set fails under
// CI=true and skips otherwise.
package testcapture
