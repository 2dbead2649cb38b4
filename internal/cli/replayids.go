package cli

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// replayIDsFile holds, in a recording directory, the ids clrdiag chose at
// random while recording (one per line, in the order they were made), so
// that a replay sends the same requests.
const replayIDsFile = "clrdiag-ids.txt"

// idSource returns the maker of random ids for requests (counters' Metrics
// session and client ids): under --record-ipc it makes random ids and
// saves them with the recording, under --replay-ipc it gives the saved ones
// back in order; otherwise nil (the library's own random ids).
func (g *globalFlags) idSource() func() string {
	switch {
	case g == nil:
		return nil
	case g.recordDir != "":
		g.idsOnce.Do(func() { g.ids = &idLog{path: filepath.Join(g.recordDir, replayIDsFile)} })
		return g.ids.record
	case g.replayDir != "":
		g.idsOnce.Do(func() { g.ids = loadIDs(filepath.Join(g.replayDir, replayIDsFile)) })
		return g.ids.replay
	}
	return nil
}

// idLog is the ids of one recording.
type idLog struct {
	mu   sync.Mutex
	path string
	ids  []string // replay: what is left
}

func (l *idLog) record() string {
	id := randomGUID()
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err == nil {
		fmt.Fprintln(f, id)
		f.Close()
	}
	return id
}

func (l *idLog) replay() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ids) == 0 {
		// A recording made without the ids (or a client that asks for
		// more): the request will differ and replay says where.
		return randomGUID()
	}
	id := l.ids[0]
	l.ids = l.ids[1:]
	return id
}

func loadIDs(path string) *idLog {
	l := &idLog{path: path}
	f, err := os.Open(path)
	if err != nil {
		return l
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() && len(l.ids) < 1024 {
		if id := strings.TrimSpace(sc.Text()); id != "" {
			l.ids = append(l.ids, id)
		}
	}
	return l
}

// randomGUID returns a random (version 4) GUID in .NET's text form.
func randomGUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
