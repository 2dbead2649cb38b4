//go:build unix

package safefile

import (
	"errors"
	"syscall"
)

const (
	oNoFollow = syscall.O_NOFOLLOW
	oNonBlock = syscall.O_NONBLOCK // a FIFO planted at a dump path must not block Seal
)

func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }
