//go:build unix

package reverse_test

import "syscall"

const syscall_ECONNRESET = syscall.ECONNRESET
