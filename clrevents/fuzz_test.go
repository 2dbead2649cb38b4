package clrevents

import (
	"errors"
	"testing"
)

// FuzzDecode feeds arbitrary payloads to every decoder through Decode and
// DecodeFields: they must not panic, must fail only with a DecodeError, and
// must agree on success for events both can decode.
func FuzzDecode(f *testing.F) {
	for _, e := range runtimeEvents {
		for v, l := range e.layouts {
			b, _ := buildFromLayout(l, 8)
			f.Add(uint8(0), e.id, uint8(v), true, b)
		}
	}
	for _, e := range rundownEvents {
		for v, l := range e.layouts {
			b, _ := buildFromLayout(l, 4)
			f.Add(uint8(1), e.id, uint8(v), false, b)
		}
	}
	for _, e := range privateEvents {
		for v, l := range e.layouts {
			b, _ := buildFromLayout(l, 8)
			f.Add(uint8(3), e.id, uint8(v), true, b)
		}
	}
	f.Add(uint8(2), uint16(0), uint8(0), true, []byte{2, 0, 0, 0})
	providers := []string{ProviderRuntime, ProviderRundown, ProviderSampleProfiler, ProviderPrivate}
	f.Fuzz(func(t *testing.T, prov uint8, id uint16, version uint8, ptr8 bool, payload []byte) {
		provider := providers[int(prov)%len(providers)]
		ptrSize := 4
		if ptr8 {
			ptrSize = 8
		}
		_, errTyped := Decode(provider, id, version, ptrSize, payload)
		_, errFields := DecodeFields(provider, id, version, ptrSize, payload)
		for _, err := range []error{errTyped, errFields} {
			var de *DecodeError
			if err != nil && !errors.Is(err, ErrUnknownEvent) && !errors.As(err, &de) {
				t.Fatalf("error is neither ErrUnknownEvent nor *DecodeError: %v", err)
			}
		}
		if errTyped == nil && errFields != nil && !errors.Is(errFields, ErrUnknownEvent) {
			t.Fatalf("Decode succeeded but DecodeFields failed: %v", errFields)
		}
		if errFields == nil && errTyped != nil && !errors.Is(errTyped, ErrUnknownEvent) {
			t.Fatalf("DecodeFields succeeded but Decode failed: %v", errTyped)
		}
		checkMethodNames(t, payload, version)
	})
}

// checkMethodNames checks that AppendMethodNames gives what
// DecodeMethodLoadVerbose gives, or the same error.
func checkMethodNames(t *testing.T, payload []byte, version uint8) {
	t.Helper()
	m, err := DecodeMethodLoadVerbose(payload, version)
	out, n, err2 := AppendMethodNames([]byte("pre"), payload, version)
	if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
		t.Fatalf("AppendMethodNames error %v, DecodeMethodLoadVerbose %v", err2, err)
	}
	if err != nil {
		if string(out) != "pre" {
			t.Fatalf("AppendMethodNames failed and appended %q", out[3:])
		}
		return
	}
	if got, want := string(out), "pre"+m.FullName()+m.MethodSignature; got != want || n != len(m.FullName()) {
		t.Fatalf("AppendMethodNames = %q (name %d bytes), want %q (%d)", got, n, want, len(m.FullName()))
	}
}
