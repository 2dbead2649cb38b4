package cli

import "github.com/clrdiag/clrdiag/transport/record"

// idSource returns the maker of random ids for requests (counters' Metrics
// session and client ids): under --record-ipc it makes random ids and
// saves them with the recording, under --replay-ipc it gives the saved ones
// back in order (record.IDLog, saved in the recording as record.IDsFile);
// otherwise nil (the library's own random ids).
func (g *globalFlags) idSource() func() string {
	switch {
	case g == nil:
		return nil
	case g.recordDir != "":
		g.idsOnce.Do(func() { g.ids = record.RecordIDs(g.recordDir) })
		return g.ids.NewID
	case g.replayDir != "":
		g.idsOnce.Do(func() { g.ids = record.ReplayIDs(g.replayDir) })
		return g.ids.NewID
	}
	return nil
}
