//go:build !unix

package safefile

// O_EXCL (CREATE_NEW) refuses an existing link on Windows; there is no
// O_NOFOLLOW, so Seal checks the type after opening.
const (
	oNoFollow = 0
	oNonBlock = 0
)

func isLoop(error) bool { return false }
