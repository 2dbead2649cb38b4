// Package jsontime holds the time type of clrdiag's JSON output.
package jsontime

import (
	"encoding/json"
	"time"
)

// Time is a time in JSON output: RFC 3339 when encoding/json can write it
// (years 0 to 9999), else the same layout with the year as it is, so a
// trace whose header carries a damaged clock still prints instead of failing.
type Time struct{ time.Time }

// MarshalJSON implements json.Marshaler.
func (t Time) MarshalJSON() ([]byte, error) {
	if y := t.Year(); y >= 0 && y <= 9999 {
		return t.Time.MarshalJSON()
	}
	return json.Marshal(t.Format("2006-01-02T15:04:05.999999999Z07:00"))
}
