package cli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	httpmon "github.com/clrdiag/clrdiag/monitor"
	"go.yaml.in/yaml/v3"
)

// k8sContainer is what the test reads of a container.
type k8sContainer struct {
	Name            string
	Args            []string
	SecurityContext struct {
		RunAsUser                *int  `yaml:"runAsUser"`
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		Capabilities             struct{ Drop, Add []string }
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

// k8sObject is what the test reads of a manifest.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string
	Metadata   struct{ Name string }
	Data       map[string]string
	Spec       struct {
		Template struct {
			Spec struct {
				HostPID         bool `yaml:"hostPID"`
				SecurityContext struct {
					RunAsNonRoot *bool `yaml:"runAsNonRoot"`
				} `yaml:"securityContext"`
				Containers []k8sContainer
				Volumes    []struct{ Name string }
			}
		}
	}
}

// TestKubernetesManifests: every YAML block of docs/kubernetes.md parses;
// the monitor's containers are locked down (read-only root file system, no
// privilege escalation, every capability dropped but the node variant's
// three, non-root pods for the sidecars), mount only declared volumes and
// take only flags the monitor has; the ConfigMap's configuration loads.
func TestKubernetesManifests(t *testing.T) {
	doc, err := os.ReadFile("../../docs/kubernetes.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(doc, -1)
	if len(blocks) < 4 {
		t.Fatalf("%d YAML blocks in docs/kubernetes.md", len(blocks))
	}
	kinds := map[string]int{}
	for _, b := range blocks {
		dec := yaml.NewDecoder(bytes.NewReader(b[1]))
		for {
			var raw map[string]any
			err := dec.Decode(&raw)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("docs/kubernetes.md: a YAML block does not parse: %v\n%s", err, b[1])
			}
			var obj k8sObject
			one, _ := yaml.Marshal(raw)
			if err := yaml.Unmarshal(one, &obj); err != nil {
				t.Fatalf("%v\n%s", err, one)
			}
			if obj.Kind == "" {
				continue // a Prometheus configuration
			}
			kinds[obj.Kind]++
			if obj.APIVersion == "" || obj.Metadata.Name == "" {
				t.Errorf("%s without apiVersion or name", obj.Kind)
			}
			if obj.Kind == "ConfigMap" {
				cfg := filepath.Join(t.TempDir(), "monitor.yaml")
				os.WriteFile(cfg, []byte(obj.Data["monitor.yaml"]), 0o600)
				if _, err := httpmon.LoadFleetConfig(cfg, nil); err != nil {
					t.Errorf("ConfigMap %s: monitor.yaml: %v", obj.Metadata.Name, err)
				}
				continue
			}
			checkPodSpec(t, obj)
		}
	}
	if kinds["Deployment"] != 2 || kinds["DaemonSet"] != 1 || kinds["ConfigMap"] != 1 {
		t.Errorf("manifests: %v", kinds)
	}
}

func checkPodSpec(t *testing.T, obj k8sObject) {
	t.Helper()
	ps := obj.Spec.Template.Spec
	vols := map[string]bool{}
	for _, v := range ps.Volumes {
		vols[v.Name] = true
	}
	found := false
	for _, c := range ps.Containers {
		for _, m := range c.VolumeMounts {
			if !vols[m.Name] {
				t.Errorf("%s %s: container %s mounts volume %q, which the pod does not declare", obj.Kind, obj.Metadata.Name, c.Name, m.Name)
			}
		}
		sc := c.SecurityContext
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			!slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("%s %s: container %s is not locked down: %+v", obj.Kind, obj.Metadata.Name, c.Name, sc)
		}
		if c.Name != "clrdiag" {
			continue
		}
		found = true
		if len(c.Args) == 0 || c.Args[0] != "monitor" {
			t.Errorf("%s %s: args %q", obj.Kind, obj.Metadata.Name, c.Args)
			continue
		}
		cmd := newMonitorCmd(&env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard})
		if err := cmd.ParseFlags(c.Args[1:]); err != nil {
			t.Errorf("%s %s: clrdiag %s: %v", obj.Kind, obj.Metadata.Name, strings.Join(c.Args, " "), err)
		}
		switch obj.Kind {
		case "Deployment": // a sidecar: non-root, no capabilities
			if nr := ps.SecurityContext.RunAsNonRoot; nr == nil || !*nr || len(sc.Capabilities.Add) > 0 || ps.HostPID {
				t.Errorf("%s %s: the sidecar is not non-root without capabilities", obj.Kind, obj.Metadata.Name)
			}
		case "DaemonSet": // the node's: the three capabilities, no more
			slices.Sort(sc.Capabilities.Add)
			if !slices.Equal(sc.Capabilities.Add, []string{"DAC_OVERRIDE", "FOWNER", "SYS_PTRACE"}) || !ps.HostPID {
				t.Errorf("%s %s: capabilities %v, hostPID %v", obj.Kind, obj.Metadata.Name, sc.Capabilities.Add, ps.HostPID)
			}
		}
	}
	if !found {
		t.Errorf("%s %s has no clrdiag container", obj.Kind, obj.Metadata.Name)
	}
}
