package eventfmt

import (
	"github.com/clrdiag/clrdiag/clrevents"
	"github.com/clrdiag/clrdiag/logs"
	"github.com/clrdiag/clrdiag/nettrace"
)

// logLevel is the Level field of a Microsoft-Extensions-Logging event: an
// ILogger LogLevel (Trace 0 ... Warning 3 ... None 6), which is not the
// EventSource level of the event (there 3 would be Warning too, but 4 is
// Informational where ILogger's 4 is Error). It shows as ILogger's name
// (logs.Level), in text and in JSON.
type logLevel int32

func (l logLevel) String() string { return logs.Level(l).String() }

// MarshalText formats l as its name (used by JSON encoding).
func (l logLevel) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// selfDescribingFields decodes the payload of an event that carries its
// field metadata, naming the ILogger level of Microsoft-Extensions-Logging.
func selfDescribingFields(ev *nettrace.Event) (nettrace.Object, error) {
	obj, err := ev.Fields()
	if err != nil || ev.Metadata.ProviderName != logs.Provider {
		return obj, err
	}
	for i, nv := range obj {
		if lv, ok := nv.Value.(int32); ok && nv.Name == "Level" {
			obj[i].Value = logLevel(lv)
		}
	}
	return obj, nil
}

// Fields decodes an event's payload as clrevents.Fields does, with the
// Level of a Microsoft-Extensions-Logging event as ILogger's level (a
// value whose String and MarshalText give its name: "Warning").
// ptrSize is the trace's pointer size.
func Fields(ev *nettrace.Event, ptrSize int) (nettrace.Object, error) {
	if len(ev.Metadata.Fields) > 0 {
		return selfDescribingFields(ev)
	}
	return clrevents.Fields(ev, ptrSize)
}

// eventPayload is Fields with what the filter cached about the event.
func eventPayload(ev *nettrace.Event, k *Kind, ptrSize int) (nettrace.Object, error) {
	if len(ev.Metadata.Fields) > 0 {
		return selfDescribingFields(ev)
	}
	if !k.native {
		return nil, nil
	}
	return clrevents.NativeFields(ev, ptrSize)
}
