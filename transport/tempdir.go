//go:build !windows

package transport

import "os"

func (c *DiscoverConfig) tempDir() string {
	if c != nil && c.TempDir != "" {
		return c.TempDir
	}
	return defaultTempDir()
}

func defaultTempDir() string {
	if d := os.Getenv("TMPDIR"); d != "" {
		return d
	}
	return "/tmp"
}
