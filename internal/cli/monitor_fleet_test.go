//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The monitor's --config: collection rules, egress and telemetry are
// listed at start; a mistake in any of them stops the monitor before it
// listens (exit 2), naming every key at fault, and --check-config says the
// same.
func TestMonitorConfigEgressTelemetry(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	good := filepath.Join(dir, "monitor.yaml")
	os.WriteFile(good, []byte(`CollectionRules:
  Exceptions:
    Trigger:
      Type: EventCounter
      Settings: {ProviderName: System.Runtime, CounterName: exception-count, GreaterThan: 10, SlidingWindowDuration: "00:00:05"}
    Actions: [{Type: CollectTrace, Settings: {Profile: Cpu, Duration: "00:00:05", Egress: local}}]
Egress:
  FileSystem:
    local: {DirectoryPath: `+out+`}
  S3Storage:
    bucket: {BucketName: dumps, Prefix: prod, Endpoint: "http://127.0.0.1:9", AccessKeyId: k, SecretAccessKey: s, ForcePathStyle: true}
Telemetry:
  ExportInterval: "00:00:05"
  Otlp: {Endpoint: "http://127.0.0.1:4318", Logs: {LogLevel: Warning}}
  RemoteWrite: {Url: "http://127.0.0.1:9090/api/v1/write", ExternalLabels: {cluster: test}}
Urls: "http://+:52323"
`), 0o600)
	code, stdout, stderr := run(t, "monitor", "--check-config", good)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"1 collection rule:", "Exceptions: EventCounter System.Runtime/exception-count > 10 for 00:00:05 -> CollectTrace to local",
		"egress provider local (FileSystem): " + out,
		"egress provider bucket (S3Storage): s3://dumps/prod at http://127.0.0.1:9",
		"telemetry: OTLP/HTTP to http://127.0.0.1:4318: metrics every 00:00:05, logs (*:Warning)",
		"telemetry: Prometheus remote write to http://127.0.0.1:9090/api/v1/write every 00:00:05",
		"ignored sections: Urls",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("listing lacks %q:\n%s", want, stdout)
		}
	}

	// The monitor starts with it, and lists it on stderr.
	stderrBuf, done := startMonitor(t, "--urls", "http://127.0.0.1:0", "--no-auth", "--no-metrics=false", "--artifact-dir", dir, "--config", good)
	if done != nil {
		t.Fatalf("monitor did not start: %v\n%s", <-done, stderrBuf.String())
	}
	if !strings.Contains(stderrBuf.String(), "egress provider local (FileSystem)") {
		t.Errorf("the start does not list the configuration:\n%s", stderrBuf.String())
	}

	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(`CollectionRules:
  R:
    Trigger: {Type: Startup}
    Actions: [{Type: CollectDump, Settings: {Egress: nosuch}}]
Egress:
  S3Storage:
    b: {Endpoint: "ftp://x", AccessKeyId: only}
  AzureBlobStorage:
    a: {AccountUri: "https://x"}
Telemetry:
  Otlp: {Endpoint: "not a url", Compression: zstd}
  RemoteWrite: {Headers: {a: b}}
  Profiling: {Samples: [cpu, heat], Interval: "00:00:20", Duration: "00:00:30"}
  Exporter: x
`), 0o600)
	for _, args := range [][]string{{"--check-config", bad}, {"--urls", "http://127.0.0.1:0", "--no-auth", "--config", bad}} {
		code, stdout, stderr = run(t, append([]string{"monitor"}, args...)...)
		if code != 2 || strings.Contains(stderr, "Listening on") || stdout != "" {
			t.Fatalf("%v: exit %d\nstdout %s\nstderr %s", args, code, stdout, stderr)
		}
		for _, want := range []string{
			`CollectionRules.R.Actions[0].Settings.Egress: no egress provider is named "nosuch"`,
			"Egress.S3Storage.b.BucketName: required",
			`Egress.S3Storage.b.Endpoint: "ftp://x" is not an http or https URL`,
			"Egress.S3Storage.b.SecretAccessKey: give AccessKeyId and SecretAccessKey together",
			"Egress.AzureBlobStorage: unknown egress provider kind",
			`Telemetry.Otlp.Compression: "zstd" is not one of gzip, none`,
			`Telemetry.Otlp.Endpoint: otlp: endpoint "not a url/v1/metrics" is not an http or https URL`,
			"Telemetry.RemoteWrite.Url: required",
			`Telemetry.Profiling.Samples[1]:`,
			"Telemetry.Profiling.Duration: 00:00:30 is not shorter than Interval 00:00:20",
			"Telemetry.Exporter: unknown setting",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%v: stderr lacks %q:\n%s", args, want, stderr)
			}
		}
	}

	// The environment form alone configures the monitor.
	t.Setenv("DotnetMonitor_Telemetry__RemoteWrite__Url", "http://127.0.0.1:9090/api/v1/write")
	t.Setenv("Egress__FileSystem__env__DirectoryPath", out)
	code, _, stderr = run(t, "monitor", "--check-config", filepath.Join(dir, "empty.yaml"))
	if code != 6 {
		t.Fatalf("missing file: exit %d %s", code, stderr)
	}
	os.WriteFile(filepath.Join(dir, "empty.yaml"), nil, 0o600)
	code, stdout, stderr = run(t, "monitor", "--check-config", filepath.Join(dir, "empty.yaml"))
	if code != 0 || !strings.Contains(stdout, "egress provider env (FileSystem): "+out) || !strings.Contains(stdout, "Prometheus remote write to http://127.0.0.1:9090/api/v1/write") {
		t.Fatalf("environment: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
