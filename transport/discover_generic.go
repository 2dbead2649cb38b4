//go:build !linux

package transport

import (
	"context"
	"fmt"
	"path/filepath"
)

// Outside Linux there is no /proc to find targets with another TMPDIR or in
// containers: discovery lists the IPC directory (the temp dir, or the pipe
// namespace on Windows) and keeps the pids that still exist.

func discover(ctx context.Context, cfg *DiscoverConfig) ([]Process, error) {
	dir, wantSockets := ipcDir(cfg)
	found, err := scanDir(dir, wantSockets)
	if err != nil {
		return nil, fmt.Errorf("transport: list %s: %w", dir, err)
	}
	var out []Process
	for pid, cs := range found {
		c := cs[0]
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if !processExists(pid) {
			continue
		}
		p := Process{PID: pid, Endpoint: Endpoint{Network: ipcNetwork, Address: c.path, PID: pid}}
		p.Name, p.CommandLine = processInfo(pid)
		out = append(out, p)
	}
	return out, nil
}

func resolve(ctx context.Context, pid int, cfg *DiscoverConfig) (Endpoint, error) {
	dir, wantSockets := ipcDir(cfg)
	nf := &NotFoundError{PID: pid, Exists: processExists(pid)}
	nf.Checked = append(nf.Checked, filepath.Join(dir, ipcPattern(pid)))
	found, err := scanDir(dir, wantSockets)
	if err != nil {
		nf.Notes = append(nf.Notes, fmt.Sprintf("cannot list %s: %v", dir, err))
		return Endpoint{}, nf
	}
	c, ok := found.best(pid)
	switch {
	case !nf.Exists:
		if ok {
			nf.Notes = append(nf.Notes, "ignored stale endpoint "+c.path+" left by an exited process")
		}
		return Endpoint{}, nf
	case !ok:
		return Endpoint{}, nf
	}
	return Endpoint{Network: ipcNetwork, Address: c.path, PID: pid}, ctx.Err()
}
