package record

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/clrdiag/clrdiag/internal/wire"
)

// IDsFile holds, in a recording directory, the ids a client chose at
// random while recording (one per line, in the order they were made), so
// that a replay sends the same requests.
const IDsFile = "clrdiag-ids.txt"

// maxReplayIDs bounds how many ids ReplayIDs reads from a recording.
const maxReplayIDs = 1024

// IDLog is the random ids of one recording (counters' Metrics session and
// client ids): RecordIDs makes random ids and saves them with the
// recording, ReplayIDs gives the saved ones back in order. NewID is safe
// for concurrent use.
type IDLog struct {
	mu     sync.Mutex
	path   string
	replay bool
	ids    []string // replay: what is left
}

// RecordIDs returns the IDLog of a recording into dir: NewID makes a random
// id and appends it to dir's IDsFile (an id that cannot be saved is still
// returned; the replay will then differ and say where).
func RecordIDs(dir string) *IDLog {
	return &IDLog{path: filepath.Join(dir, IDsFile)}
}

// ReplayIDs returns the IDLog of the recording in dir: NewID returns the
// saved ids in order (at most the first 1024), then random ones. A
// recording made without the ids gives only random ones.
func ReplayIDs(dir string) *IDLog {
	l := &IDLog{path: filepath.Join(dir, IDsFile), replay: true}
	f, err := os.Open(l.path)
	if err != nil {
		return l
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() && len(l.ids) < maxReplayIDs {
		if id := strings.TrimSpace(sc.Text()); id != "" {
			l.ids = append(l.ids, id)
		}
	}
	return l
}

// NewID returns the next id: a new random one saved with the recording, or
// the next saved one of a replay.
func (l *IDLog) NewID() string {
	if l.replay {
		return l.next()
	}
	id := wire.RandomGUID()
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err == nil {
		fmt.Fprintln(f, id)
		f.Close()
	}
	return id
}

func (l *IDLog) next() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ids) == 0 {
		// A recording made without the ids (or a client that asks for
		// more): the request will differ and replay says where.
		return wire.RandomGUID()
	}
	id := l.ids[0]
	l.ids = l.ids[1:]
	return id
}
