package weighted

import (
	"errors"
	"io"
	"strconv"
)

// ErrNoTimeline is returned by WriteChromium for a profile built without
// Config.Timeline.
var ErrNoTimeline = errors.New("profile has no timeline (build it with Config.Timeline)")

// NoFrames names the pseudo-frame that stands for an empty stack (a sample
// of a thread with no managed frames) in the exporters.
const NoFrames = "[no managed frames]"

// unknownModule is the Chromium category of a frame without a module.
const unknownModule = "unknown"

// Title is what a profile is called in the viewers: its Name, or the
// process id.
func (w *Profile) Title() string {
	switch {
	case w.Name != "":
		return w.Name
	case w.ProcessID != 0:
		return "process " + strconv.Itoa(w.ProcessID)
	}
	return "profile"
}

// flushAt is the size at which the exporters hand their buffer to the
// writer.
const flushAt = 64 << 10

// exportBuf returns the exporters' buffer for an estimated output of
// size bytes: flushAt and some, or less for an output too small to fill it
// (a small profile does not pay for clearing a large buffer, a large one
// does not grow it piecemeal).
func exportBuf(size int) []byte {
	return make([]byte, 0, min(size, flushAt+4096))
}

// flushFull hands b to w once it holds flushAt bytes, and returns it
// emptied.
func flushFull(w io.Writer, b []byte) ([]byte, error) {
	if len(b) < flushAt {
		return b, nil
	}
	_, err := w.Write(b)
	return b[:0], err
}
