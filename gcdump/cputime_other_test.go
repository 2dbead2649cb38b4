//go:build !unix

package gcdump

import "time"

func cpuTime() time.Duration { return 0 }
