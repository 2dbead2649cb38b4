package pyroscope_test

import (
	"strings"
	"testing"

	"github.com/clrdiag/clrdiag/telemetry"
	"github.com/clrdiag/clrdiag/telemetry/pyroscope"
	"go.opentelemetry.io/otel/attribute"
)

// FuzzName: whatever the service name, pod, namespace and labels hold, the
// name parameter keeps Pyroscope's syntax (APP{k=v,...}, the characters its
// parser accepts) and every label survives with its own key.
func FuzzName(f *testing.F) {
	f.Add("Shop Api", "pod-1", "prod", "env", "prod,eu")
	f.Add("", "", "", "", "")
	f.Add("a{b}", "x}y", "{", "k=v", " spaced ")
	f.Add("svc", "p", "n", "a b", "a_b")
	f.Fuzz(func(t *testing.T, service, pod, ns, key, value string) {
		// Two configured labels whose keys may clean to the same name.
		e, err := pyroscope.New(pyroscope.Config{URL: "http://127.0.0.1:1", Labels: map[string]string{key: value, value: key}})
		if err != nil {
			t.Fatal(err)
		}
		res := &telemetry.Resource{Attrs: []attribute.KeyValue{attribute.String("service.name", service),
			attribute.String("k8s.pod.name", pod), attribute.String("k8s.namespace.name", ns)}}
		name := e.Name(res)
		app, rest, ok := strings.Cut(name, "{")
		if !ok || !strings.HasSuffix(rest, "}") || !appName.MatchString(app) {
			t.Fatalf("name %q is not APP{labels}", name)
		}
		body := strings.TrimSuffix(rest, "}")
		if body == "" {
			return
		}
		seen := map[string]bool{}
		for _, kv := range strings.Split(body, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || !labelName.MatchString(k) || k == "__name__" || v == "" || v != strings.TrimSpace(v) || strings.ContainsAny(v, "{}") || seen[k] {
				t.Fatalf("label %q of %q breaks the name syntax", kv, name)
			}
			seen[k] = true
		}
	})
}
