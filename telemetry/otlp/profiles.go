package otlp

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/clrdiag/clrdiag/telemetry"
	pprof "github.com/google/pprof/profile"
	colprofilespb "go.opentelemetry.io/proto/slim/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/slim/otlp/common/v1"
	profilespb "go.opentelemetry.io/proto/slim/otlp/profiles/v1development"
	"google.golang.org/protobuf/proto"
)

// ErrProfilesDisabled is the error of ExportProfile without
// Config.Profiles.
var ErrProfilesDisabled = errors.New("otlp: the profiles signal is off (Config.Profiles)")

// ExportProfile converts a pprof profile (gzipped or not) of the process
// res into OTLP profiles and sends them now, with retries. Profiles are
// large and few (one per process and interval), so they are not queued:
// call it from the goroutine that made the profile. scope names what made
// it (e.g. "clrdiag").
func (e *Exporter) ExportProfile(ctx context.Context, res *telemetry.Resource, scope string, data []byte) error {
	if !e.cfg.Profiles {
		return ErrProfilesDisabled
	}
	p, err := pprof.ParseData(data)
	if err != nil {
		return fmt.Errorf("otlp: the profile is not a pprof profile: %w", err)
	}
	req := ProfilesProto(res, scope, p)
	body, err := e.post(ctx, e.cfg.ProfilesURL, req)
	if err != nil {
		return err
	}
	var resp colprofilespb.ExportProfilesServiceResponse
	if err := proto.Unmarshal(body, &resp); err == nil {
		if ps := resp.GetPartialSuccess(); ps != nil && (ps.RejectedProfiles > 0 || ps.ErrorMessage != "") {
			return fmt.Errorf("otlp: %s rejected %d of the profiles: %s", e.cfg.ProfilesURL, ps.RejectedProfiles, ps.ErrorMessage)
		}
	}
	return nil
}

// ProfilesProto converts a pprof profile into an OTLP profiles request:
// one Profile per pprof sample type, all sharing one dictionary (strings,
// functions, mappings, locations, stacks, and the samples' labels as
// attributes). Entry 0 of every table is its zero value, as OTLP requires;
// a stack's first location is the leaf, as in pprof.
func ProfilesProto(res *telemetry.Resource, scope string, p *pprof.Profile) *colprofilespb.ExportProfilesServiceRequest {
	d := &dictionary{
		dict: &profilespb.ProfilesDictionary{
			StringTable:    []string{""},
			MappingTable:   []*profilespb.Mapping{{}},
			LocationTable:  []*profilespb.Location{{}},
			FunctionTable:  []*profilespb.Function{{}},
			LinkTable:      []*profilespb.Link{{}},
			AttributeTable: []*profilespb.KeyValueAndUnit{{}},
			StackTable:     []*profilespb.Stack{{}},
		},
		strings: map[string]int32{"": 0},
		stacks:  map[string]int32{"": 0},
		attrs:   map[string]int32{},
	}
	mappings := map[uint64]int32{}
	for _, m := range p.Mapping {
		mappings[m.ID] = int32(len(d.dict.MappingTable))
		d.dict.MappingTable = append(d.dict.MappingTable, &profilespb.Mapping{
			MemoryStart: m.Start, MemoryLimit: m.Limit, FileOffset: m.Offset, FilenameStrindex: d.str(m.File)})
	}
	functions := map[uint64]int32{}
	for _, f := range p.Function {
		functions[f.ID] = int32(len(d.dict.FunctionTable))
		d.dict.FunctionTable = append(d.dict.FunctionTable, &profilespb.Function{
			NameStrindex: d.str(f.Name), SystemNameStrindex: d.str(f.SystemName), FilenameStrindex: d.str(f.Filename), StartLine: f.StartLine})
	}
	locations := map[uint64]int32{}
	for _, l := range p.Location {
		loc := &profilespb.Location{Address: l.Address}
		if l.Mapping != nil {
			loc.MappingIndex = mappings[l.Mapping.ID]
		}
		for _, ln := range l.Line {
			line := &profilespb.Line{Line: ln.Line, Column: ln.Column}
			if ln.Function != nil {
				line.FunctionIndex = functions[ln.Function.ID]
			}
			loc.Lines = append(loc.Lines, line)
		}
		locations[l.ID] = int32(len(d.dict.LocationTable))
		d.dict.LocationTable = append(d.dict.LocationTable, loc)
	}

	// Each pprof sample's stack and attributes, shared by every type.
	stacks := make([]int32, len(p.Sample))
	attrs := make([][]int32, len(p.Sample))
	for i, s := range p.Sample {
		idx := make([]int32, len(s.Location))
		for j, l := range s.Location {
			idx[j] = locations[l.ID]
		}
		stacks[i] = d.stack(idx)
		attrs[i] = d.labels(s)
	}

	sp := &profilespb.ScopeProfiles{Scope: &commonpb.InstrumentationScope{Name: scope}}
	var period *profilespb.ValueType
	if p.PeriodType != nil {
		period = &profilespb.ValueType{TypeStrindex: d.str(p.PeriodType.Type), UnitStrindex: d.str(p.PeriodType.Unit)}
	}
	for t, st := range p.SampleType {
		prof := &profilespb.Profile{
			SampleType:   &profilespb.ValueType{TypeStrindex: d.str(st.Type), UnitStrindex: d.str(st.Unit)},
			TimeUnixNano: uint64(max(p.TimeNanos, 0)),
			DurationNano: uint64(max(p.DurationNanos, 0)),
			PeriodType:   period,
			Period:       p.Period,
			ProfileId:    profileID(),
		}
		for i, s := range p.Sample {
			if t >= len(s.Value) || s.Value[t] == 0 {
				continue
			}
			prof.Samples = append(prof.Samples, &profilespb.Sample{StackIndex: stacks[i], Values: []int64{s.Value[t]}, AttributeIndices: attrs[i]})
		}
		sp.Profiles = append(sp.Profiles, prof)
	}
	return &colprofilespb.ExportProfilesServiceRequest{
		ResourceProfiles: []*profilespb.ResourceProfiles{{Resource: resourceProto(res), ScopeProfiles: []*profilespb.ScopeProfiles{sp}}},
		Dictionary:       d.dict,
	}
}

type dictionary struct {
	dict    *profilespb.ProfilesDictionary
	strings map[string]int32
	stacks  map[string]int32
	attrs   map[string]int32
}

func (d *dictionary) str(s string) int32 {
	if i, ok := d.strings[s]; ok {
		return i
	}
	i := int32(len(d.dict.StringTable))
	d.dict.StringTable = append(d.dict.StringTable, s)
	d.strings[s] = i
	return i
}

func (d *dictionary) stack(locs []int32) int32 {
	var b strings.Builder
	for _, l := range locs {
		b.WriteString(strconv.Itoa(int(l)))
		b.WriteByte(',')
	}
	if i, ok := d.stacks[b.String()]; ok {
		return i
	}
	i := int32(len(d.dict.StackTable))
	d.dict.StackTable = append(d.dict.StackTable, &profilespb.Stack{LocationIndices: locs})
	d.stacks[b.String()] = i
	return i
}

// labels turns a sample's pprof labels into attribute indices.
func (d *dictionary) labels(s *pprof.Sample) []int32 {
	var out []int32
	add := func(key string, v *commonpb.AnyValue, unit string) {
		var id string
		switch x := v.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			id = key + "\x00s" + x.StringValue + "\x00" + unit
		case *commonpb.AnyValue_IntValue:
			id = key + "\x00i" + strconv.FormatInt(x.IntValue, 10) + "\x00" + unit
		}
		i, ok := d.attrs[id]
		if !ok {
			i = int32(len(d.dict.AttributeTable))
			d.dict.AttributeTable = append(d.dict.AttributeTable, &profilespb.KeyValueAndUnit{KeyStrindex: d.str(key), Value: v, UnitStrindex: d.str(unit)})
			d.attrs[id] = i
		}
		out = append(out, i)
	}
	for _, k := range sortedKeys(s.Label) {
		for _, v := range s.Label[k] {
			add(k, &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}, "")
		}
	}
	for _, k := range sortedKeys(s.NumLabel) {
		for j, v := range s.NumLabel[k] {
			unit := ""
			if j < len(s.NumUnit[k]) {
				unit = s.NumUnit[k][j]
			}
			add(k, &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}, unit)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func profileID() []byte {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	return id
}
